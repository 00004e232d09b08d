"""n-step transitions from rollout fragments, vectorised over steps, env copies and agents.

For the n steps from t: R = sum_{j<k} gamma^j r_{t+j}, next_obs = next_obs_{t+k-1}
(and so the other fields of ``next_obs``, such as its action mask),
discount = gamma^k (0 if they ended in a termination), with k = n or the number of
steps until the episode ended (Sutton & Barto, ch. 7). Windows that reach past the data
collected so far wait for the next fragment; n = 1 passes every valid step straight through.
"""

from dataclasses import dataclass

import numpy as np

STEP_FIELDS = ("obs", "action", "reward", "next_obs", "terminated", "truncated", "valid")
# fields that describe next_obs, where the env gives them (taken from the last of the n steps)
SUCCESSOR_FIELDS = ("next_action_mask",)


@dataclass
class Transitions:
    """Rows ``[T, E, N, ...]`` with a ``valid [T, E, N]`` mask: the replay fields."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    discount: np.ndarray
    valid: np.ndarray
    successor: dict[str, np.ndarray]  # SUCCESSOR_FIELDS the fragments had, aligned with next_obs


class NStepBuilder:
    def __init__(self, n_step: int, gamma: float, time_limit_as_terminal: bool = False) -> None:
        self.n_step = n_step
        self.gamma = gamma
        self.time_limit_as_terminal = time_limit_as_terminal
        self.pending: dict[str, np.ndarray] | None = None  # last n-1 steps, not yet emitted

    def add(self, steps: dict[str, np.ndarray]) -> Transitions:
        """``steps[f]`` is ``[T, E, N, ...]`` for f in STEP_FIELDS (and SUCCESSOR_FIELDS
        where present); returns the ready transitions."""
        kept = (*STEP_FIELDS, *(f for f in SUCCESSOR_FIELDS if f in steps))
        if self.pending is not None:
            steps = {f: np.concatenate([self.pending[f], steps[f]]) for f in kept}
        length = steps["reward"].shape[0]
        terminal = steps["terminated"] | (self.time_limit_as_terminal & steps["truncated"])
        done = steps["terminated"] | steps["truncated"]
        ret = np.zeros(steps["reward"].shape, np.float64)
        taken = np.zeros(steps["reward"].shape, np.int64)
        ended = np.zeros(steps["reward"].shape, bool)
        terminal_end = np.zeros(steps["reward"].shape, bool)
        for j in range(self.n_step):
            span = length - j  # n-step returns from t < span can look j steps ahead
            if span <= 0:
                break
            running = ~ended[:span] & (taken[:span] == j)
            ret[:span] += np.where(running, self.gamma**j * steps["reward"][j:], 0.0)
            taken[:span] += running
            terminal_end[:span] |= running & terminal[j:]
            ended[:span] |= running & done[j:]
        ready = steps["valid"] & (ended | (taken == self.n_step))
        keep = self.n_step - 1
        if keep > 0:
            tail = {f: steps[f][length - keep :] for f in kept} if length >= keep else {f: steps[f] for f in kept}
            tail["valid"] = tail["valid"] & ~ready[length - tail["valid"].shape[0] :]
            self.pending = tail
        last = np.maximum(np.arange(length).reshape(-1, *[1] * (ret.ndim - 1)) + taken - 1, 0)
        e_idx, n_idx = np.indices(ret.shape[1:])
        next_obs = steps["next_obs"][last, e_idx[None], n_idx[None]]
        successor = {f: steps[f][last, e_idx[None], n_idx[None]] for f in SUCCESSOR_FIELDS if f in steps}
        discount = np.where(terminal_end, 0.0, self.gamma**taken).astype(np.float32)
        return Transitions(steps["obs"], steps["action"], ret.astype(np.float32), next_obs, discount, ready, successor)

    def end_workers(self, workers: np.ndarray) -> None:
        """The episodes in flight of ``workers`` end as truncations at the last step added
        (their env copies restarted elsewhere, say a replaced env runner's): the steps still
        waiting for their n-step bootstrap there when the next fragment comes, and never
        reach into that fragment's new episodes."""
        if self.pending is None or not len(workers):
            return
        last = {f: self.pending[f][-1, workers] for f in ("valid", "terminated", "truncated")}
        truncated = self.pending["truncated"].copy()  # the pending steps may be views of a read-only fragment
        truncated[-1, workers] = last["truncated"] | (last["valid"] & ~last["terminated"])
        self.pending["truncated"] = truncated

    def state_dict(self) -> dict:
        return {"pending": self.pending}

    def load_state_dict(self, state: dict) -> None:
        self.pending = state["pending"]
