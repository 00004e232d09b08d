"""Whole episodes from rollout fragments, for learners that train on episodes (QMIX, VDN,
recurrent IQL; SPEC §1.3-1.4, paper 003).

``EpisodeBuilder`` keeps each worker's episode in flight and hands back the ones that
finished, padded to ``max_length`` steps: fields that describe what the agents saw (obs,
state, action_mask) have ``max_length + 1`` rows, the last real one being the final
observation; per-step fields (action, reward, terminated, truncated, valid) have
``max_length``; ``filled [max_length]`` marks the real steps. ``EpisodeStorage`` keeps
them as rows of a ``ReplayBuffer`` (one row per episode, the time axis inside each field),
sampled uniformly or by priority like transitions, and cuts an update's spans
(``relayrl.replay.spans``) from them.
"""

from typing import Any

import numpy as np

from relayrl.core.specs import GroupSpec
from relayrl.replay.buffer import FieldSpec, ReplayBuffer
from relayrl.replay.spans import episode_spans

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
                raise EpisodeTooLong(self.max_length)
            for name, buffer in self.buffers.items():
                buffer[workers, self.length] = fragment[name][k]
            self.length += 1
            ended = np.flatnonzero(fragment["over"][k])
            if len(ended):
                self._write_final(ended, fragment, k)
                finished.append(self._finish(ended))
        # the final observation so far, which the next step's own overwrites: an episode cut
        # short (``end_workers``) keeps it
        self._write_final(np.flatnonzero(self.length > 0), fragment, -1)
        if not finished:
            return None
        return {name: np.concatenate([f[name] for f in finished]) for name in finished[0]}

    def _write_final(self, workers: np.ndarray, fragment: dict[str, np.ndarray], k: int) -> None:
        """What ``workers`` saw after step ``k``, in the row after their last step."""
        assert self.buffers is not None and self.length is not None
        for name, successor in SEEN.items():
            if name in self.buffers:
                self.buffers[name][workers, self.length[workers]] = fragment[successor][k][workers]

    def _finish(self, ended: np.ndarray) -> dict[str, np.ndarray]:
        """The episodes of workers ``ended``, padded; their buffers start afresh."""
        assert self.buffers is not None and self.length is not None
        episodes = {name: buffer[ended].copy() for name, buffer in self.buffers.items()}
        episodes["filled"] = np.arange(self.max_length)[None] < self.length[ended, None]
        for buffer in self.buffers.values():
            buffer[ended] = 0
        self.length[ended] = 0
        return episodes

    def end_workers(self, workers: np.ndarray) -> dict[str, np.ndarray] | None:
        """The episodes in flight of ``workers`` end as truncations at their last step (their
        env copies restarted elsewhere); returns them as ``add`` returns finished ones."""
        if self.buffers is None or self.length is None:
            return None
        running = np.asarray(workers)[self.length[workers] > 0]
        if not len(running):
            return None
        last = self.length[running] - 1
        valid, terminated = self.buffers["valid"][running, last], self.buffers["terminated"][running, last]
        self.buffers["truncated"][running, last] |= valid & ~terminated
        return self._finish(running)

    def state_dict(self) -> dict:
        return {"buffers": self.buffers, "length": self.length}

    def load_state_dict(self, state: dict) -> None:
        self.buffers, self.length = state["buffers"], state["length"]


class EpisodeTooLong(ValueError):
    """An episode outgrew the rows of ``max_length`` steps it is stored in."""

    def __init__(self, max_length: int) -> None:
        super().__init__(f"an episode ran past max_length={max_length} steps")
        self.max_length = max_length


class EpisodeStorage:
    """Whole episodes as replay rows, and the spans of the sampled ones: whole episodes, or
    spans of ``sequence_length`` steps after up to ``burn_in`` steps (None: whole)."""

    @staticmethod
    def fields(spec: GroupSpec, max_length: int) -> dict[str, FieldSpec]:
        """One stored episode: what the agents saw over T+1 rows, per-step fields over T,
        and the filled flags."""
        t, n = max_length, spec.n_agents
        fields = {
            "obs": FieldSpec((t + 1, n, *spec.obs_shape), spec.obs_dtype),
            "action": FieldSpec((t, n), np.dtype(np.uint8 if spec.n_actions <= 256 else np.int64)),
            "reward": FieldSpec((t, n), np.dtype(np.float32)),
            "terminated": FieldSpec((t, n), np.dtype(bool)),
            "truncated": FieldSpec((t, n), np.dtype(bool)),
            "valid": FieldSpec((t, n), np.dtype(bool)),
            "filled": FieldSpec((t,), np.dtype(bool)),
        }
        if spec.state_shape:
            fields["state"] = FieldSpec((t + 1, *spec.state_shape), spec.state_dtype)
        if spec.masked:
            fields["action_mask"] = FieldSpec((t + 1, n, spec.n_actions), np.dtype(bool))
        return fields

    def __init__(self, replay: ReplayBuffer, max_length: int, sequence_length: int | None, burn_in: int, tbptt: int | None) -> None:
        self.replay = replay
        self.builder = EpisodeBuilder(max_length)
        self.sequence_length, self.burn_in, self.tbptt = sequence_length, burn_in, tbptt
        self.batch: dict[str, np.ndarray] | None = None
        self.gathered: np.ndarray | None = None  # slots of the reused rows the batch holds

    @classmethod
    def from_config(cls, replay: ReplayBuffer, config: Any) -> "EpisodeStorage":
        """From a learner section with ``max_episode_length``, ``sequence_length``, ``burn_in`` and ``tbptt``."""
        return cls(replay, config.max_episode_length, config.sequence_length, config.burn_in, config.tbptt)

    @property
    def size(self) -> int:
        return int(self.replay.size[0])

    def add(self, fragment: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
        """Completes episodes from a fragment ``[T, W, ...]`` and stores the finished ones;
        returns the slots written and how many."""
        return self._store(self.builder.add(fragment))

    def end_workers(self, workers: np.ndarray) -> tuple[np.ndarray, int]:
        """Stores the episodes in flight of ``workers``, ended as truncations at their last
        step; returns the slots written and how many."""
        return self._store(self.builder.end_workers(workers))

    def _store(self, finished: dict[str, np.ndarray] | None) -> tuple[np.ndarray, int]:
        if finished is None:
            return np.zeros(0, np.int64), 0
        k = len(finished["filled"])
        slots = (self.replay.write_position[0] + np.arange(k)) % self.replay.capacity
        self.replay.add({name: finished[name][None] for name in self.replay.fields})
        if self.gathered is not None and np.isin(slots, self.gathered).any():
            self.gathered = None  # a reused episode was overwritten: gather the set again
        return slots, k

    def gather(self, slots: np.ndarray, reused: int = 0) -> dict[str, np.ndarray]:
        """The rows of ``slots`` in preallocated arrays. The first ``reused`` slots (AccMER's
        reuse set, paper 002 section IV-B) are gathered once while the set stands, and stay
        in the batch's first rows: an update moves only the fresh rows."""
        stored = self.replay.storage()
        if self.batch is None:
            self.batch = {name: np.empty((len(slots), *f.shape), f.dtype) for name, f in self.replay.fields.items()}
        start = reused if self.gathered is not None and np.array_equal(self.gathered, slots[:reused]) else 0
        for name, rows in self.batch.items():
            np.take(stored[name][0], slots[start:], axis=0, out=rows[start:])
        self.gathered = slots[:reused].copy()
        return self.batch

    def spans(self, gathered: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Whole episodes, or spans whose first trained step is drawn uniformly."""
        begins = None
        if self.sequence_length is not None:
            begins = (rng.random(len(gathered["filled"])) * gathered["filled"].sum(axis=1)).astype(np.int64)
        return episode_spans(gathered, begins, self.sequence_length, self.burn_in, self.tbptt)

    def state_dict(self) -> dict[str, Any]:
        return {"builder": self.builder.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.builder.load_state_dict(state["builder"])
