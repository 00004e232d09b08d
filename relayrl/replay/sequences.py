"""Sequences from transition storage (SPEC §1.4, paper 003): every step of every worker is
one replay row, and an update's spans (``relayrl.replay.spans``) are gathered from
consecutive rows of one worker's episode.

A fragment ``[T, W, ...]`` is written time-major, so a worker's next step lies ``W`` rows
after its last one in the ring. Each row also keeps its step index within its episode
(``step``) and the rollout step that wrote it (``stamp``, from 1): rows ``W`` apart belong to
one episode exactly where both advance by one, which tells where a span must stop (the
episode ended, or the ring was overwritten or not written yet) without any per-episode index.

A sampled slot is the first trained step of its span: up to ``burn_in`` earlier steps of
the same episode warm the hidden state first (fewer at the episode's start, or where the
ring has overwritten them), and the span runs ``sequence_length`` steps or to the
episode's end. The slot is what the samplers (uniform, prioritized, AccMER's reuse) draw
and weigh, so each span's weight goes back to its first trained transition.
"""

from typing import Any

import numpy as np

from relayrl.core.specs import GroupSpec
from relayrl.replay.buffer import FieldSpec, ReplayBuffer
from relayrl.replay.spans import SEEN, STEP, cuts

NEXT = {"obs": "next_obs", "state": "next_state", "action_mask": "next_action_mask"}


class TransitionSequences:
    """Transition rows of one group's agents ``[N, ...]`` and the spans cut from them."""

    @staticmethod
    def fields(spec: GroupSpec, max_length: int) -> dict[str, FieldSpec]:
        """One stored transition (``max_length`` is the episode storage's; unused here)."""
        n = spec.n_agents
        fields = {
            "obs": FieldSpec((n, *spec.obs_shape), spec.obs_dtype),
            "next_obs": FieldSpec((n, *spec.obs_shape), spec.obs_dtype),
            "action": FieldSpec((n,), np.dtype(np.uint8 if spec.n_actions <= 256 else np.int64)),
            "reward": FieldSpec((n,), np.dtype(np.float32)),
            "terminated": FieldSpec((n,), np.dtype(bool)),
            "truncated": FieldSpec((n,), np.dtype(bool)),
            "valid": FieldSpec((n,), np.dtype(bool)),
            "over": FieldSpec((), np.dtype(bool)),
            "step": FieldSpec((), np.dtype(np.int32)),
            "stamp": FieldSpec((), np.dtype(np.int64)),
        }
        if spec.state_shape:
            fields["state"] = fields["next_state"] = FieldSpec(spec.state_shape, spec.state_dtype)
        if spec.masked:
            fields["action_mask"] = fields["next_action_mask"] = FieldSpec((n, spec.n_actions), np.dtype(bool))
        return fields

    def __init__(self, replay: ReplayBuffer, sequence_length: int, burn_in: int, tbptt: int | None) -> None:
        self.replay = replay
        self.sequence_length, self.burn_in, self.tbptt = sequence_length, burn_in, tbptt
        self.stamp = 0  # rollout steps written
        self.episode_step: np.ndarray | None = None  # [W]: each worker's step in its episode

    @classmethod
    def from_config(cls, replay: ReplayBuffer, config: Any) -> "TransitionSequences":
        """From a learner section with ``sequence_length``, ``burn_in`` and ``tbptt``."""
        return cls(replay, config.sequence_length, config.burn_in, config.tbptt)

    @property
    def size(self) -> int:
        return int(self.replay.size[0])

    def add(self, fragment: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Stores a fragment ``[T, W, ...]`` (with ``over [T, W]``); returns the slots written
        and the number of episodes that ended in it."""
        over = fragment["over"]
        t, w = over.shape
        if self.episode_step is None:
            self.episode_step = np.zeros(w, np.int32)
        step = np.empty((t, w), np.int32)
        for k in range(t):  # T steps of [W] counters
            step[k] = self.episode_step
            self.episode_step = np.where(over[k], 0, self.episode_step + 1).astype(np.int32)
        stamp = np.broadcast_to(self.stamp + 1 + np.arange(t, dtype=np.int64)[:, None], (t, w))
        self.stamp += t
        rows = {name: fragment[name] for name in self.replay.fields if name not in ("step", "stamp")}
        rows.update(step=step, stamp=stamp)
        slots = (self.replay.write_position[0] + np.arange(t * w)) % self.replay.capacity
        self.replay.add({name: value.reshape(t * w, *value.shape[2:])[None] for name, value in rows.items()})
        return slots, int(over.sum())

    def end_workers(self, workers: np.ndarray) -> tuple[np.ndarray, int]:
        """The episodes in flight of ``workers`` end at their last stored step (their env
        copies restarted elsewhere): the next row of each starts a new episode, so no span
        runs across, and one that reaches the last row bootstraps there. Returns no slots
        (nothing is written) and the number of episodes ended."""
        if self.episode_step is None:
            return np.zeros(0, np.int64), 0
        running = np.asarray(workers)[self.episode_step[workers] > 0]
        self.episode_step[running] = 0
        return np.zeros(0, np.int64), len(running)

    def gather(self, slots: np.ndarray, reused: int = 0) -> dict[str, np.ndarray]:
        """The span that starts at each sampled slot (its first trained step)."""
        stored = {name: rows[0] for name, rows in self.replay.storage().items()}
        cap, w = self.replay.capacity, self.episode_step.size
        stamp, step = stored["stamp"], stored["step"]
        back = np.arange(self.burn_in, 0, -1)  # burn_in .. 1 steps before the slot
        earlier = (slots[:, None] - back * w) % cap
        same = (stamp[earlier] == stamp[slots, None] - back) & (step[earlier] == step[slots, None] - back)
        burn = np.cumprod(same[:, ::-1], axis=1).sum(axis=1)  # the run of same-episode steps just before the slot
        first = (slots - burn * w) % cap
        span_max = int((burn + self.sequence_length).max())
        at = (first[:, None] + np.arange(span_max) * w) % cap  # [B, K] rows of the span
        offset = np.arange(span_max)
        exists = np.cumprod((stamp[at] == stamp[first, None] + offset) & (step[at] == step[first, None] + offset), axis=1).astype(bool)
        lengths = exists.sum(axis=1)
        k = int(lengths.max())
        at, exists = at[:, :k], exists[:, :k]
        b = np.arange(len(slots))
        last = at[b, lengths - 1]  # each row's last step: its successor fields give the row after it
        span = {name: stored[name][at] for name in STEP}
        for name in SEEN:
            if name in stored:
                seen = np.concatenate([stored[name][at], stored[name][at[:, :1]]], axis=1)
                seen[b, lengths] = stored[NEXT[name]][last]
                span[name] = seen
        steps = np.arange(k)
        span["exists"] = exists
        span["trained"] = exists & (steps >= burn[:, None]) & (steps < (burn + self.sequence_length)[:, None])
        span["ends"] = exists & stored["over"][at]
        before = (first - w) % cap  # the action before the span's first row, where the ring still holds it
        known = (step[first] > 0) & (stamp[before] == stamp[first] - 1)
        previous = np.concatenate([stored["action"][before][:, None], span["action"]], axis=1).astype(np.int64)
        previous[:, 0] = np.where(known[:, None], previous[:, 0], -1)
        span["previous"] = previous
        span["cut"] = cuts(burn, k, self.tbptt)
        return span

    def spans(self, gathered: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Gathered spans are already cut."""
        return gathered

    def state_dict(self) -> dict[str, Any]:
        return {"stamp": self.stamp, "episode_step": self.episode_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stamp, self.episode_step = state["stamp"], state["episode_step"]
