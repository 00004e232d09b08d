"""Whole episodes from rollout fragments, for learners that train on episodes (QMIX, VDN,
recurrent IQL; SPEC §1.3-1.4, paper 003).

``EpisodeBuilder`` keeps each worker's episode in flight and hands back the ones that
finished, padded to ``max_length`` steps: fields that describe what the agents saw (obs,
state, action_mask) have ``max_length + 1`` rows, the last real one being the final
observation; per-step fields (action, reward, terminated, truncated, valid) have
``max_length``; ``filled [max_length]`` marks the real steps. Stored as rows of a
``ReplayBuffer`` (one row per episode, the time axis inside each field), episodes are sampled
uniformly or by priority like transitions.
"""

import numpy as np

from relayrl.replay.buffer import FieldSpec

SEEN = {"obs": "next_obs", "state": "next_state", "action_mask": "next_action_mask"}  # field -> its successor
STEP = ("action", "reward", "terminated", "truncated", "valid")


class EpisodeBuilder:
    """Per-worker episodes in flight, from fragments ``[T, W, ...]`` (with ``over [T, W]``)."""

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length
        self.buffers: dict[str, np.ndarray] | None = None
        self.length: np.ndarray | None = None  # [W]: steps of each worker's episode so far

    def fields(self) -> dict[str, FieldSpec]:
        """The stored layout of one episode (known once the first fragment came)."""
        assert self.buffers is not None, "add a fragment first"
        specs = {k: FieldSpec(v.shape[1:], v.dtype) for k, v in self.buffers.items()}
        specs["filled"] = FieldSpec((self.max_length,), np.dtype(bool))
        return specs

    def _allocate(self, fragment: dict[str, np.ndarray]) -> None:
        workers, t = fragment["reward"].shape[1], self.max_length
        self.buffers = {}
        for name in SEEN:
            if name in fragment:
                v = fragment[name]
                self.buffers[name] = np.zeros((workers, t + 1, *v.shape[2:]), v.dtype)
        for name in STEP:
            v = fragment[name]
            self.buffers[name] = np.zeros((workers, t, *v.shape[2:]), v.dtype)
        self.length = np.zeros(workers, np.int64)

    def add(self, fragment: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """Appends a fragment; returns the episodes it finished, each field ``[K, ...]``
        (None if none did)."""
        if self.buffers is None:
            self._allocate(fragment)
        assert self.buffers is not None and self.length is not None
        workers = np.arange(self.length.size)
        finished: list[dict[str, np.ndarray]] = []
        for k in range(fragment["reward"].shape[0]):
            if (self.length >= self.max_length).any():
                raise ValueError(
                    f"an episode ran past max_length={self.max_length} steps: set it to the environment's episode limit or more"
                )
            for name, buffer in self.buffers.items():
                buffer[workers, self.length] = fragment[name][k]
            self.length += 1
            over = fragment["over"][k]
            if over.any():
                ended = np.flatnonzero(over)
                for name, successor in SEEN.items():
                    if name in self.buffers:
                        self.buffers[name][ended, self.length[ended]] = fragment[successor][k][ended]
                episodes = {name: buffer[ended].copy() for name, buffer in self.buffers.items()}
                episodes["filled"] = np.arange(self.max_length)[None] < self.length[ended, None]
                finished.append(episodes)
                for buffer in self.buffers.values():
                    buffer[ended] = 0
                self.length[ended] = 0
        if not finished:
            return None
        return {name: np.concatenate([f[name] for f in finished]) for name in finished[0]}

    def state_dict(self) -> dict:
        return {"buffers": self.buffers, "length": self.length}

    def load_state_dict(self, state: dict) -> None:
        self.buffers, self.length = state["buffers"], state["length"]
