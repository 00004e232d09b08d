"""Layers holding P independent parameter sets ``[P, ...]``, applied to inputs ``[P, B, ...]``.

P agents cost one batched matmul instead of P small ones. Each set is initialised like
torch's own layers (weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in))), independently
per set.
"""

import math

import torch
from torch import nn


def _uniform_(tensor: torch.Tensor, fan_in: int) -> None:
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(tensor, -bound, bound)


class StackedLinear(nn.Module):
    """y[p] = x[p] @ W[p] + b[p]; ``W`` is ``[P, in, out]``."""

    def __init__(self, n_sets: int, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_sets, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(n_sets, 1, out_features))
        _uniform_(self.weight, in_features)
        _uniform_(self.bias, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class StackedConv2d(nn.Module):
    """Stride-1, unpadded k x k convolution on channel-last inputs ``[P, B, H, W, C]``.

    Written as one batched matmul over k*k shifted views (im2col by slicing), which keeps
    the channel-last layout of the environments and needs no permute. ``W`` is
    ``[P, k*k*C_in, C_out]`` with rows ordered (di, dj, c).
    """

    def __init__(self, n_sets: int, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        fan_in = in_channels * kernel_size * kernel_size
        self.weight = nn.Parameter(torch.empty(n_sets, fan_in, out_channels))
        self.bias = nn.Parameter(torch.empty(n_sets, 1, out_channels))
        _uniform_(self.weight, fan_in)
        _uniform_(self.bias, fan_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_sets, batch, height, width, _ = x.shape
        k = self.kernel_size
        out_h, out_w = height - k + 1, width - k + 1
        patches = torch.cat(
            [x[:, :, di : di + out_h, dj : dj + out_w, :] for di in range(k) for dj in range(k)], dim=-1
        )
        y = torch.baddbmm(self.bias, patches.reshape(n_sets, batch * out_h * out_w, -1), self.weight)
        return y.reshape(n_sets, batch, out_h, out_w, -1)


def clip_grad_norm_per_set(parameters: list[nn.Parameter], n_sets: int, max_norm: float) -> torch.Tensor:
    """Scales each parameter set's gradient (every tensor's rows ``[P, ...]``) to norm <=
    ``max_norm``, exactly as ``torch.nn.utils.clip_grad_norm_`` would on that set alone;
    returns the norms before clipping ``[P]``."""
    grads = [p.grad for p in parameters if p.grad is not None]
    squared = torch.stack([g.pow(2).reshape(n_sets, -1).sum(dim=1) for g in grads]).sum(dim=0)
    norm = squared.sqrt()
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norm
