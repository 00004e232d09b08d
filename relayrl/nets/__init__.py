"""Networks with an agent axis: P parameter sets evaluated in one batched call."""

from relayrl.nets.qnetwork import QNetwork
from relayrl.nets.stacked import StackedConv2d, StackedLinear

__all__ = ["QNetwork", "StackedConv2d", "StackedLinear"]
