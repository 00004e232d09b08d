"""Reproducible, distinct seeds derived from one run seed."""

import numpy as np


def derive_seeds(seed: int, count: int, stream: str = "") -> list[int]:
    """``count`` distinct 31-bit seeds for the named ``stream`` (e.g. env copies, evaluation)."""
    entropy = [seed] + [ord(c) for c in stream]
    children = np.random.SeedSequence(entropy).spawn(count)
    return [int(c.generate_state(1, dtype=np.uint32)[0] >> 1) for c in children]
