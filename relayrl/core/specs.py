"""Specs of agent groups: agents with equal observation and action spaces."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupSpec:
    """One group of agents stepped as an agent axis ``[E, N, ...]``.

    ``obs_dtype`` is the smallest dtype that stores the observations exactly
    (Pursuit counts fit uint8); adapters convert once, at the boundary.
    """

    name: str
    agent_ids: tuple[str, ...]
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    n_actions: int

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)
