"""Fragments of |td| scores for the SUPER selection tests: per sender, rows valid with a
given probability, invalid rows carrying ``INVALID_TD`` so that any leak into a window or a
threshold shows."""

import numpy as np

INVALID_TD = 1e6  # |td| placed on invalid rows: would dominate any window / threshold it leaked into


def fragments(rng, n, m, count, valid_p, dist="exponential"):
    """``count`` fragments ``(td, valid)``; sender i's rows are valid with probability valid_p[i].
    Invalid rows carry INVALID_TD so any leak into a window is visible."""
    out = []
    for _ in range(count):
        if dist == "exponential":
            td = rng.exponential(1.0, size=(n, m))
        elif dist == "lognormal":
            td = rng.lognormal(0.0, 1.5, size=(n, m))
        else:
            raise ValueError(dist)
        valid = rng.random((n, m)) < np.asarray(valid_p)[:, None]
        td = np.where(valid, td, INVALID_TD)
        out.append((td, valid))
    return out
