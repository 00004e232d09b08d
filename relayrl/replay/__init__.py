"""Replay layer: P independent (optionally prioritized) ring buffers in one set of arrays."""

from relayrl.replay.buffer import FieldSpec, ReplayBuffer, SampledBatch
from relayrl.replay.sum_tree import SumTree

__all__ = ["FieldSpec", "ReplayBuffer", "SampledBatch", "SumTree"]
