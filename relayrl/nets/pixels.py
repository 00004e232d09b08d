"""A torso for screens: the convolutional network of Mnih et al. 2015 ("Human-level control
through deep reinforcement learning", methods: 32 filters 8x8 stride 4, 64 4x4 stride 2,
64 3x3 stride 1, each with a ReLU, then a fully connected layer of 512 ReLUs), for P
parameter sets at once. Orthogonal initialisation with gain sqrt(2), biases zero (as
policy-gradient learners initialise their layers, ``relayrl.nets.mlp``).

Inputs are channel-last screens ``[P, ..., H, W, C]`` (8-bit intensities are divided by 255:
``relayrl.nets.observations``);
the P sets run as one grouped convolution, each set's filters seeing only its own rows.
"""

import math

import torch
from torch import nn

from relayrl.nets.mlp import HIDDEN_GAIN, orthogonal_
from relayrl.nets.observations import network_input
from relayrl.nets.precision import bfloat16, lowered
from relayrl.nets.stacked import StackedLinear, sets_to_groups

# (filters, kernel, stride) of each convolution, and the width of the layer after them
NATURE_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
NATURE_WIDTH = 512


class InnerConv2d(nn.Conv2d):
    """A convolution that computes in bfloat16 where the run's ``precision`` says so
    (``relayrl.nets.precision``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if lowered():
            assert self.bias is not None
            return self._conv_forward(*bfloat16(x, self.weight, self.bias))
        return super().forward(x)


def conv_output(size: int, layers: tuple[tuple[int, int, int], ...] = NATURE_LAYERS) -> int:
    """The side of a square map after unpadded convolutions of ``layers``."""
    for _, kernel, stride in layers:
        size = (size - kernel) // stride + 1
    return size


class NatureTorso(nn.Module):
    """``[P, ..., H, W, C] -> [P, ..., 512]``."""

    def __init__(self, n_sets: int, obs_shape: tuple[int, ...], pixels: bool) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"the nature_cnn torso takes screens H x W x C; these observations are {obs_shape}")
        height, width, channels = obs_shape
        if min(conv_output(height), conv_output(width)) < 1:
            raise ValueError(f"the nature_cnn torso needs screens of at least 36 x 36 pixels; these are {height} x {width}")
        self.n_sets, self.obs_shape, self.pixels = n_sets, tuple(obs_shape), pixels
        convs = []
        for filters, kernel, stride in NATURE_LAYERS:
            conv = InnerConv2d(n_sets * channels, n_sets * filters, kernel, stride, groups=n_sets)
            with torch.no_grad():
                for block in conv.weight.view(n_sets, filters, -1):  # each set's own orthogonal filters
                    nn.init.orthogonal_(block, HIDDEN_GAIN)
                conv.bias.zero_()
            convs.append(conv)
            channels = filters
        self.convs = nn.ModuleList(convs)
        flat = channels * conv_output(height) * conv_output(width)
        self.linear = orthogonal_(StackedLinear(n_sets, flat, NATURE_WIDTH, inner=True), HIDDEN_GAIN)
        self.out_features = NATURE_WIDTH

    def forward(self, screens: torch.Tensor) -> torch.Tensor:
        p, lead = screens.shape[0], screens.shape[1:-3]
        rows = math.prod(lead)
        height, width, channels = screens.shape[-3:]
        # the sets side by side on the channel axis, kept channel-last in memory, the layout the
        # CPU's convolutions run fastest in
        x = network_input(sets_to_groups(screens.reshape(p, rows, height, width, channels)), self.pixels)
        for conv in self.convs:
            x = conv(x).relu_()  # in place: a convolution's backward needs its input, not its output
        flat = x.reshape(rows, p, -1).transpose(0, 1)
        return torch.relu(self.linear(flat)).float().reshape(p, *lead, -1)
