"""Replay layer: P independent (optionally prioritized) ring buffers in one set of arrays."""

from relayrl.replay.buffer import FieldSpec, ReplayBuffer, ReplayPlan, SampledBatch, row_nbytes
from relayrl.replay.sum_tree import SumTree

__all__ = ["FieldSpec", "ReplayBuffer", "ReplayPlan", "SampledBatch", "SumTree", "row_nbytes"]
