"""Acting functions that tests name by import path (scripted policies)."""

import numpy as np


def always_right(obs: np.ndarray, spec) -> np.ndarray:
    """Corridor: every entity steps right (action 1) and reaches the end."""
    return np.ones(obs.shape[:2], np.int64)


def wrong_shape(obs: np.ndarray, spec) -> np.ndarray:
    return np.ones(obs.shape[:1], np.int64)


def out_of_range(obs: np.ndarray, spec) -> np.ndarray:
    return np.full(obs.shape[:2], spec.n_actions, np.int64)


def fractional(obs: np.ndarray, spec) -> np.ndarray:
    return np.full(obs.shape[:2], 0.7)


def raises(obs: np.ndarray, spec) -> np.ndarray:
    raise KeyError("the heuristic's lookup table has no such row")
