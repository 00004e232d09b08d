"""How the networks read observations (``GroupSpec.pixels``): 8-bit intensities divided by
255, as Mnih et al. 2015 feed Atari screens, and every other observation as float32, as it
is. Storage keeps the env's dtype (images stay bytes); the scaling happens where a network
reads them, the same in NumPy and in torch (one float32 division, correctly rounded)."""

import numpy as np
import torch

from relayrl.core.specs import PIXEL_RANGE


def network_input(obs: torch.Tensor, pixels: bool) -> torch.Tensor:
    """``obs`` (any dtype) -> float32, divided by 255 where ``pixels``."""
    x = obs.float()
    return x / PIXEL_RANGE if pixels else x


def network_input_array(obs: np.ndarray, pixels: bool) -> np.ndarray:
    """``network_input`` for NumPy arrays (the same float32 values)."""
    x = obs.astype(np.float32, copy=False)
    return x / np.float32(PIXEL_RANGE) if pixels else x
