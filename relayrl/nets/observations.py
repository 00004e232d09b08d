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


def warn_of_flat_screens(spec: GroupSpec, layer: str, weights: int, fix: str, state: bool = False) -> None:
    """Warns where a network reads large screens flat (the observations, or with ``state``
    the env's global state of more than as many numbers, a screen's or not): its first
    ``layer`` holds ``weights`` per parameter set and training will crawl; ``fix`` says what
    reads them better."""
    shape, what = (spec.state_shape, "global state is") if state else (spec.obs_shape, "observations are")
    if (state or spec.pixels) and int(np.prod(shape)) > FLAT_SCREEN_INPUTS:
        warnings.warn(f"{spec.name}'s {what} {'x'.join(map(str, shape))} {'numbers' if state else 'screens'}, read flat: {layer} alone has "
                      f"{weights:,} weights per parameter set, and training will crawl; {fix}", RelayRLWarning, stacklevel=3)
