"""Finished episodes, as every vector env reports them, and the tally that keeps them (a
leaf module: the built-in vector envs and the generic ones import it without importing each
other)."""

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class EpisodeStats:
    """Finished episodes since the last drain: per-group returns summed over the group's
    agents and the env copy each ran in (what a round's results attribute to the policies
    of that copy's match). Envs whose agents have episodes of their own (K copies of one
    single-agent env) also list the agent each episode belongs to."""

    returns: list[np.ndarray] = field(default_factory=list)  # each [n_groups]
    lengths: list[int] = field(default_factory=list)
    agents: list[int] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)

    @staticmethod
    def joined(parts: list["EpisodeStats"]) -> "EpisodeStats":
        """The episodes of several parts (env workers, runners) in their order."""
        episodes = EpisodeStats()
        for stats in parts:
            for name in ("returns", "lengths", "agents", "copies"):
                getattr(episodes, name).extend(getattr(stats, name))
        return episodes


class EpisodeTally:
    """The returns and lengths of the episodes in flight in ``rows`` rows (an env copy each,
    or, with ``agents_per_copy``, an agent of a copy where agents have episodes of their own)
    and the episodes that ended since the last ``drain``."""

    def __init__(self, rows: int, columns: int, agents_per_copy: int = 0) -> None:
        self.returns = np.zeros((rows, columns), np.float64)
        self.lengths = np.zeros(rows, np.int64)
        self.agents_per_copy = agents_per_copy
        self.ended = EpisodeStats()

    def clear(self) -> None:
        """New episodes in every row (a reset); the ended ones stay until drained."""
        self.returns[:] = 0
        self.lengths[:] = 0

    def add(self, rewards: np.ndarray, over: np.ndarray) -> None:
        """One step: ``rewards [rows, columns]``; ``over [rows]``: the rows whose episode
        ended with it."""
        self.returns += rewards
        self.lengths += 1
        if over.any():
            self._end(np.flatnonzero(over))

    def _end(self, rows: np.ndarray) -> None:
        self.ended.returns.extend(self.returns[rows].copy())
        self.ended.lengths.extend(self.lengths[rows].tolist())
        if self.agents_per_copy:
            self.ended.agents.extend((rows % self.agents_per_copy).tolist())
            self.ended.copies.extend((rows // self.agents_per_copy).tolist())
        else:
            self.ended.copies.extend(rows.tolist())
        self.returns[rows] = 0
        self.lengths[rows] = 0

    def drain(self) -> EpisodeStats:
        """The episodes that ended since the last drain."""
        done, self.ended = self.ended, EpisodeStats()
        return done

    def cut(self) -> EpisodeStats:
        """Ends the episodes in flight here (a round's end truncates them) and returns them
        with their returns so far; the ones that ended before wait for ``drain``."""
        before, self.ended = self.ended, EpisodeStats()
        self._end(np.flatnonzero(self.lengths > 0))
        cut, self.ended = self.ended, before
        return cut

    def state_dict(self) -> dict[str, Any]:
        return {"returns": self.returns.copy(), "lengths": self.lengths.copy(), "episodes": asdict(self.ended)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.returns, self.lengths = np.array(state["returns"], np.float64), np.array(state["lengths"], np.int64)
        self.ended = EpisodeStats(**state["episodes"])
