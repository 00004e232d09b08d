"""Observations that are not Boxes, read as flat float32 vectors: a Discrete as its one-hot
vector, a MultiDiscrete as one-hots side by side, a MultiBinary as its bits, a Dict or
Tuple as its parts' flat forms one after another (``gymnasium.spaces.flatten``'s layout,
which RLlib's and Stable-Baselines3's observation preprocessors also use). Actions that are
a MultiDiscrete's choices, taken as one Discrete over their combinations."""

from typing import Any

import numpy as np
from gymnasium import spaces

from relayrl.core.errors import SpaceError


def flat_box(space: spaces.Space, who: str = "") -> spaces.Box:
    """The float32 Box of ``space``'s flat form; a SpaceError naming the space where gymnasium
    cannot flatten it to one (Text, Graph, Sequence)."""
    try:
        flat = spaces.flatten_space(space)
    except NotImplementedError:
        flat = None
    if not isinstance(flat, spaces.Box):
        raise SpaceError(f"{who}relayrl reads Box observations and flattens Discrete, MultiDiscrete, MultiBinary, Dict and Tuple ones "
                          f"(gymnasium.spaces.flatten), got {space}: give the env an observation space of those")
    return spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32), dtype=np.float32)


def flatten_obs(space: spaces.Space, value: Any) -> np.ndarray:
    """One observation of ``space`` in ``flat_box(space)``'s layout."""
    return np.asarray(spaces.flatten(space, value), np.float32)


MAX_COMBINATIONS = 4096  # MultiDiscrete actions are one Discrete over their combinations up to this many


def combinations(space: spaces.MultiDiscrete, who: str = "") -> int:
    """The number of combinations of a MultiDiscrete's choices, which relayrl's learners
    choose among as one Discrete action (``env_actions`` gives the env its choices)."""
    count = int(np.prod(space.nvec, dtype=np.int64))
    if space.nvec.ndim != 1 or count > MAX_COMBINATIONS:
        raise SpaceError(f"{who}{space} has {count:,} combinations of choices; relayrl acts on MultiDiscrete actions as one Discrete "
                          f"over their combinations, up to {MAX_COMBINATIONS:,} of them in one row of choices: give the env fewer choices, or "
                          "Discrete or Box actions")
    return count


def env_actions(space: spaces.MultiDiscrete, chosen: np.ndarray) -> np.ndarray:
    """Combinations ``chosen [...]`` (indices, the first choice slowest) -> the env's choices
    ``[..., len(nvec)]``, with the space's ``start``."""
    return np.stack(np.unravel_index(chosen.astype(np.int64), tuple(space.nvec.tolist())), axis=-1) + space.start
