"""How the networks read observations (``GroupSpec.pixels``): 8-bit intensities divided by
255, as Mnih et al. 2015 feed Atari screens, and every other observation as float32, as it
is. Storage keeps the env's dtype (images stay bytes); the scaling happens where a network
reads them, the same in NumPy and in torch (one float32 division, correctly rounded)."""

import warnings

import numpy as np
import torch

from relayrl.core.errors import RelayRLWarning
from relayrl.core.specs import PIXEL_RANGE, GroupSpec

FLAT_SCREEN_INPUTS = 16_384  # screens larger than 128 x 128 x 1 (or 74 x 74 x 3) read flat get a warning


def network_input(obs: torch.Tensor, pixels: bool) -> torch.Tensor:
    """``obs`` (any dtype) -> float32, divided by 255 where ``pixels``."""
    x = obs.float()
    return x / PIXEL_RANGE if pixels else x


def network_input_array(obs: np.ndarray, pixels: bool) -> np.ndarray:
    """``network_input`` for NumPy arrays (the same float32 values)."""
    x = obs.astype(np.float32, copy=False)
    return x / np.float32(PIXEL_RANGE) if pixels else x


def warn_of_flat_screens(spec: GroupSpec, layer: str, weights: int, fix: str) -> None:
    """Warns where a network reads large screens flat: its first ``layer`` holds ``weights``
    per parameter set and training will crawl; ``fix`` says what reads them better."""
    if spec.pixels and int(np.prod(spec.obs_shape)) > FLAT_SCREEN_INPUTS:
        warnings.warn(f"{spec.name}'s observations are {'x'.join(map(str, spec.obs_shape))} screens, read flat: {layer} alone has {weights:,} "
                      f"weights per parameter set, and training will crawl; {fix}", RelayRLWarning, stacklevel=3)
