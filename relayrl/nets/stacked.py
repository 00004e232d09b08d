"""Layers holding P independent parameter sets ``[P, ...]``, applied to inputs ``[P, B, ...]``.

P agents cost one batched matmul instead of P small ones. Each set is initialised like
torch's own layers (weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in))), independently
per set.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from relayrl.nets.precision import bfloat16, lowered


def _uniform_(tensor: torch.Tensor, fan_in: int) -> None:
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(tensor, -bound, bound)


class StackedLinear(nn.Module):
    """y[p] = x[p] @ W[p] + b[p]; ``W`` is ``[P, in, out]``. An ``inner`` layer (not a
    network's output) computes in bfloat16 where the run's ``precision`` says so, and
    returns bfloat16; a layer that is not inner reads its input as float32
    (``relayrl.nets.precision``)."""

    def __init__(self, n_sets: int, in_features: int, out_features: int, inner: bool = False) -> None:
        super().__init__()
        self.inner = inner
        self.weight = nn.Parameter(torch.empty(n_sets, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(n_sets, 1, out_features))
        _uniform_(self.weight, in_features)
        _uniform_(self.bias, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inner and lowered():
            return torch.baddbmm(*bfloat16(self.bias, x, self.weight))
        return torch.baddbmm(self.bias, x.float(), self.weight)


def sets_to_groups(x: torch.Tensor) -> torch.Tensor:
    """Channel-last images of P sets ``[P, B, H, W, C]`` -> ``[B, P * C, H, W]`` in torch's
    channels-last memory format: set p's channels are ``p * C .. p * C + C - 1``."""
    n_sets, batch, height, width, channels = x.shape
    return x.permute(1, 2, 3, 0, 4).reshape(batch, height, width, n_sets * channels).permute(0, 3, 1, 2)


def groups_to_sets(y: torch.Tensor, n_sets: int) -> torch.Tensor:
    """The inverse of ``sets_to_groups``: ``[B, P * C, H, W]`` -> ``[P, B, H, W, C]``."""
    batch, grouped_channels, height, width = y.shape
    per_set = y.permute(0, 2, 3, 1).reshape(batch, height, width, n_sets, grouped_channels // n_sets)
    return per_set.permute(3, 0, 1, 2, 4).contiguous()


class StackedConv2d(nn.Module):
    """Stride-1, unpadded k x k convolution of P parameter sets on ``[B, P * C_in, H, W]``
    (``sets_to_groups``), as one grouped ``conv2d`` in the channels-last memory format; an
    inner layer (``relayrl.nets.precision``).

    ``W`` is kept as ``[P, k*k*C_in, C_out]`` with rows ordered (di, dj, c): set p's kernel is
    read as an im2col matrix. One grouped convolution per layer replaced a batched matmul
    over the k x k shifted views: the views' copies cost as much as the products (a Battle
    update 1.5-1.8x, a Pursuit update 1.1x faster; ``benchmarks/conv_layout.py``).
    """

    def __init__(self, n_sets: int, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.n_sets, self.in_channels, self.out_channels = n_sets, in_channels, out_channels
        self.kernel_size = kernel_size
        fan_in = in_channels * kernel_size * kernel_size
        self.weight = nn.Parameter(torch.empty(n_sets, fan_in, out_channels))
        self.bias = nn.Parameter(torch.empty(n_sets, 1, out_channels))
        _uniform_(self.weight, fan_in)
        _uniform_(self.bias, fan_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p, k, c_in, c_out = self.n_sets, self.kernel_size, self.in_channels, self.out_channels
        # [P, (di, dj, c), o] -> [P * o, c, di, dj], stored channels-last as x is
        weight, bias, x = bfloat16(self.weight, self.bias, x) if lowered() else (self.weight, self.bias, x)
        kernel = weight.view(p, k, k, c_in, c_out).permute(0, 4, 1, 2, 3).reshape(p * c_out, k, k, c_in)
        return F.conv2d(x, kernel.permute(0, 3, 1, 2), bias.reshape(p * c_out), groups=p)


def clip_grad_norm_per_set(parameters: list[nn.Parameter], n_sets: int, max_norm: float | None) -> torch.Tensor:
    """Scales each parameter set's gradient (every tensor's rows ``[P, ...]``) to norm <=
    ``max_norm``, exactly as ``torch.nn.utils.clip_grad_norm_`` would on that set alone
    (``None``: no clipping); returns the norms before clipping ``[P]``."""
    grads = [p.grad for p in parameters if p.grad is not None]
    squared = torch.stack([g.pow(2).reshape(n_sets, -1).sum(dim=1) for g in grads]).sum(dim=0)
    norm = squared.sqrt()
    if max_norm is None:
        return norm
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norm
