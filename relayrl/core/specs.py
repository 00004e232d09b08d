"""Specs of agent groups: agents with equal observation and action spaces."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupSpec:
    """One group of agents stepped as an agent axis ``[E, N, ...]``.

    ``obs_dtype`` is the smallest dtype that stores the observations exactly
    (Pursuit counts fit uint8); adapters convert once, at the boundary. Discrete actions
    have ``n_actions`` choices; continuous actions (``n_actions == 0``) are vectors of
    ``action_shape`` within ``[action_low, action_high]`` per dimension. ``masked``: the env
    says which discrete actions each entity may take at each step (action masks).
    Observations the networks take are images ``HxWxC`` or flat vectors; an env's other
    shapes (a ``[27, 5]`` table of entities) are flattened, their shape kept in ``flattened``.
    """

    name: str
    agent_ids: tuple[str, ...]
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    n_actions: int
    action_shape: tuple[int, ...] = ()
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    masked: bool = False
    state_shape: tuple[int, ...] = ()
    state_dtype: np.dtype = np.dtype(np.float32)
    flattened: tuple[int, ...] = ()  # the env's observation shape, where it was neither HxWxC nor flat

    @property
    def continuous(self) -> bool:
        return self.n_actions == 0

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)
