"""Optimiser steps with subnormal floats treated as zero.

Adam's moments of weights whose gradients stay zero (dead units, image features that never
light) decay below float32's smallest normal number (1.2e-38), where each operation costs a
CPU about a hundred times more. In Battle's pretraining 45% of the first hidden layer's
first moments were subnormal and Adam's step took 36 ms instead of 2.6 ms
(``benchmarks/subnormal_adam.py``). Such a moment moves a weight by less than 1e-35, below
a float32 weight's resolution, so the flushed step gives the same weights to the bit
(``tests/nets/test_subnormals.py``). XLA and TensorFlow flush on CPUs everywhere; relayrl
flushes in the optimiser's step only, so envs, acting and gradients keep IEEE arithmetic
(MPE's physics puts subnormal velocities into observations, which a flush would zero).
"""

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def flushed_subnormals() -> Iterator[None]:
    """Within the block, this thread's CPU arithmetic treats subnormal floats as zero (the
    FTZ and DAZ flags); IEEE arithmetic after it. Intra-op threads keep the setting they
    started with: with ``torch_threads`` > 1 a step's work on them is not flushed (the same
    weights, slower)."""
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def optimizer_step(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()`` with subnormals flushed."""
    with flushed_subnormals():
        optimizer.step()
