"""Test helper: what an env hands up at reset, as per-group lists of arrays."""

import numpy as np

from relayrl.envs.types import GroupObs


def split(observed: list[GroupObs]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``[GroupObs]`` -> (per-group ``obs``, per-group ``alive``)."""
    return [o.obs for o in observed], [o.alive for o in observed]
