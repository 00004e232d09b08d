"""The run setting ``precision``: the dtype of the products of the networks' inner layers
during updates.

``bfloat16`` runs the matrix products and convolutions of every inner layer (convolutions,
hidden layers, a GRU's input projection) in bfloat16 while learners update: their inputs
and weights are rounded to bfloat16, the products accumulate in float32 inside the kernel,
and the activations between inner layers (and their gradients) are bfloat16. Everything
else stays float32: the weights themselves (the optimiser updates float32 copies), every
network's output layer, which reads its input as float32 (Q-values and returns of 100 would
round to 0.5 in bfloat16), recurrences, mixers, targets and losses. Acting and evaluation
compute in float32. This is the mixed precision
of Micikevicius et al. 2018 with bfloat16 (Kalamkar et al. 2019), which needs no loss
scaling. On a CPU with AVX512-BF16 the products themselves ran 1.5-2.6x faster and whole
updates 0.9-2.0x, by how much of an update is large products (docs/results/bfloat16/README.md);
GPUs from compute capability 8.0 and CPUs with AMX have bfloat16 units too. ``float32`` (the
default) changes nothing.

The setting holds in the thread that entered ``inner_products`` only, so acting in another
thread keeps float32.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch

Precision = Literal["float32", "bfloat16"]
_state = threading.local()


@contextmanager
def inner_products(precision: Precision) -> Iterator[None]:
    """Inner layers' products in ``precision`` within the block (this thread)."""
    before = getattr(_state, "low", False), getattr(_state, "casts", None)
    _state.low, _state.casts = precision == "bfloat16", {}
    try:
        yield
    finally:
        _state.low, _state.casts = before


def lowered() -> bool:
    """Whether inner layers compute their products in bfloat16 here and now."""
    return getattr(_state, "low", False)


def bfloat16(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """The tensors rounded to bfloat16; a parameter's rounding is made once per version
    (until the optimiser changes it) and grad mode within the block, as autocast caches its
    casts of weights: an update's forward passes through one network share it."""
    return [_cast(t) if isinstance(t, torch.nn.Parameter) else t.to(torch.bfloat16) for t in tensors]


def _cast(parameter: torch.nn.Parameter) -> torch.Tensor:
    key = id(parameter), torch.is_grad_enabled()
    version, cast = _state.casts.get(key, (None, None))
    if cast is None or version != parameter._version:
        cast = parameter.to(torch.bfloat16)
        _state.casts[key] = parameter._version, cast
    return cast
