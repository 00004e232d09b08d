"""Networks with an agent axis: P parameter sets evaluated in one batched call."""

import importlib
from typing import Any

# imported on first use: the config sections beside them (``model_config``) are read
# without torch
_EXPORTS = {"QNetwork": "relayrl.nets.qnetwork", "StackedConv2d": "relayrl.nets.stacked", "StackedLinear": "relayrl.nets.stacked"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'relayrl.nets' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
