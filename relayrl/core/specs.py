"""Specs of agent groups: agents with equal observation and action spaces."""

from dataclasses import dataclass
from typing import Any

import numpy as np

# where a learner that reads the global state (``GroupSpec.state_shape``) finds it, for the
# errors that say an env gives none
STATE_SOURCE = "relayrl passes an env's state() to its learners where the env declares its state_space beside it, as PettingZoo's API asks"


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
    ``pixels``: the env declares its observations as 8-bit intensities (a uint8 Box from 0 to
    255: screens, Atari RAM); every network reads them divided by 255, while storage keeps
    the bytes (``pixels_of`` tells them from other uint8 observations, such as Pursuit's
    counts, which are read as they are).
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
    pixels: bool = False

    @property
    def continuous(self) -> bool:
        return self.n_actions == 0

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)


PIXEL_RANGE = 255.0  # 8-bit intensities are read divided by this (relayrl.nets.observations)


def pixels_of(space: Any) -> bool:
    """Whether a Gymnasium observation space declares 8-bit intensities: a uint8 Box whose
    bounds are 0 and 255 everywhere (the convention of image and Atari RAM envs)."""
    low, high, dtype = getattr(space, "low", None), getattr(space, "high", None), getattr(space, "dtype", None)
    return dtype == np.uint8 and low is not None and high is not None and bool((np.asarray(low) == 0).all() and (np.asarray(high) == 255).all())
