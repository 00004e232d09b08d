"""Spans: what one update of a recurrent learner trains on (SPEC §1.4, paper 003).

A span is B rows of K consecutive steps of one episode each, as NumPy arrays:

- per step ``[B, K, ...]``: ``action``, ``reward``, ``terminated``, ``truncated``, ``valid``
  (per agent), ``exists`` (a step of the row's episode), ``trained`` (its loss counts: past
  the burn-in and inside the span), ``ends`` (the episode's last step);
- per observed row ``[B, K + 1, ...]``: ``obs``, ``state``, ``action_mask`` (row k is what
  the agents saw before step k, the row after a row's last step its final observation),
  ``previous`` (the action before each row, -1 where none is known: the episode's start)
  and ``cut`` (the hidden state is detached before that row: after the burn-in, and every
  ``tbptt`` steps).

The agents' hidden state starts at zeros at a span's first row; the first ``burn`` steps of
a row (up to ``burn_in``, fewer near the episode's start) only warm it up. Episode storage
(``relayrl.replay.episodes``) cuts spans from stored episodes, transition storage
(``relayrl.replay.sequences``) gathers them from consecutive transitions.
"""

import numpy as np

STEP = ("action", "reward", "terminated", "truncated", "valid")  # per-step fields of a span
SEEN = ("obs", "state", "action_mask")  # per observed row


def cuts(burn: np.ndarray, k: int, tbptt: int | None) -> np.ndarray:
    """``[B, K + 1]``: True before the first trained row of a row with a burn-in, and
    every ``tbptt`` steps."""
    steps = np.arange(k)
    cut = np.zeros((len(burn), k + 1), bool)
    cut[:, 1:] = (steps[None] + 1 == burn[:, None]) & (burn[:, None] > 0)  # hidden state from the burn-in, without its gradient
    if tbptt is not None:
        cut[:, 1:] |= (steps[None] + 1) % tbptt == 0
    return cut


def episode_spans(
    batch: dict[str, np.ndarray], begins: np.ndarray | None, sequence_length: int | None, burn_in: int, tbptt: int | None
) -> dict[str, np.ndarray]:
    """The span of each stored episode of ``batch`` (fields ``[B, T(+1), ...]`` and
    ``filled``): the whole episode (``begins`` None; up to the longest in the batch), or a
    span of ``sequence_length`` steps from step ``begins [B]`` after up to ``burn_in``
    earlier ones."""
    lengths = batch["filled"].sum(axis=1)
    if begins is None:
        first = burn = np.zeros(len(lengths), np.int64)
        k = int(lengths.max())
    else:
        first = np.maximum(0, begins - burn_in)
        burn = begins - first
        k = int(min((burn + sequence_length).max(), (lengths - first).max()))
    steps = np.arange(k)
    at = first[:, None] + steps  # [B, K]: the episode step at each span position
    rows = np.arange(len(lengths))[:, None]
    stored = batch["action"].shape[1]
    step_at, seen_at = np.minimum(at, stored - 1), np.minimum(np.concatenate([at, at[:, -1:] + 1], axis=1), stored)
    span = {name: batch[name][rows, step_at] for name in STEP}
    for name in SEEN:
        if name in batch:
            span[name] = batch[name][rows, seen_at]
    span["exists"] = at < lengths[:, None]
    span["trained"] = span["exists"] & (steps >= burn[:, None])
    if sequence_length is not None:
        span["trained"] &= steps < (burn + sequence_length)[:, None]
    span["ends"] = at == (lengths - 1)[:, None]
    before = np.concatenate([at - 1, at[:, -1:]], axis=1)  # the action before each observed row
    span["previous"] = np.where((before >= 0)[..., None], batch["action"][rows, np.clip(before, 0, stored - 1)].astype(np.int64), -1)
    span["cut"] = cuts(burn, k, tbptt)
    return span
