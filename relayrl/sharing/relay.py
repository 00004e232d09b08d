"""Routing of selected transitions from senders to receivers, with bandwidth accounting.

Transitions of the fragment are laid out sender-major, ``[N * M]`` rows; receiver j stores
row (i, m) when sender i selected it, i != j, and both are in the sharing team. The
replay adds all receivers in one masked call.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class RelayStats:
    """Counters since the last drain."""

    offered: np.ndarray  # [N] valid new transitions per sender
    sent: np.ndarray  # [N] transitions each sender relayed
    delivered: int = 0  # transitions inserted into receivers' replays
    bytes_sent: int = 0

    def bandwidth(self) -> np.ndarray:
        """Realised bandwidth per sender: relayed / offered (NaN where nothing was offered)."""
        return np.divide(self.sent, self.offered, out=np.full(self.sent.shape, np.nan), where=self.offered > 0)


class Relay:
    def __init__(self, n_agents: int, team: list[int] | None = None) -> None:
        self.n_agents = n_agents
        members = np.zeros(n_agents, bool)
        members[list(range(n_agents)) if team is None else team] = True
        self.members = members
        # receive[j, i]: receiver j accepts transitions from sender i
        self.receive = members[:, None] & members[None, :] & ~np.eye(n_agents, dtype=bool)
        self.stats = self._fresh_stats()

    def _fresh_stats(self) -> RelayStats:
        return RelayStats(np.zeros(self.n_agents, np.int64), np.zeros(self.n_agents, np.int64))

    def route(self, selected: np.ndarray, valid: np.ndarray, bytes_per_transition: int) -> np.ndarray:
        """``selected, valid [N, M]`` -> receiver mask ``[N, N * M]`` over sender-major rows."""
        selected = selected & valid & self.members[:, None]
        n, m = selected.shape
        mask = (self.receive[:, :, None] & selected[None, :, :]).reshape(n, n * m)
        sent = selected.sum(axis=1)
        self.stats.offered += np.where(self.members, valid.sum(axis=1), 0)
        self.stats.sent += sent
        self.stats.delivered += int(mask.sum())
        self.stats.bytes_sent += int(sent.sum()) * bytes_per_transition
        return mask

    def drain(self) -> RelayStats:
        stats, self.stats = self.stats, self._fresh_stats()
        return stats
