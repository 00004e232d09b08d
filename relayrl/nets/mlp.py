"""Multi-layer perceptrons with P parameter sets ``[P, ...]`` on inputs ``[P, B, in]``, and
the orthogonal initialisation policy-gradient learners use (Saxe et al. 2014; the gains of
Andrychowicz et al. 2021, "What matters in on-policy RL": sqrt(2) for hidden layers, 0.01
for the policy's output, 1 for the value's).
"""

import math
from collections.abc import Sequence

import torch
from torch import nn

from relayrl.nets.stacked import StackedLinear

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}
HIDDEN_GAIN = math.sqrt(2.0)


def orthogonal_(layer: StackedLinear, gain: float) -> StackedLinear:
    """Each parameter set's weight ``[in, out]`` orthogonal with ``gain``, biases zero."""
    with torch.no_grad():
        for weight in layer.weight:  # once, at construction: P small QR factorisations
            nn.init.orthogonal_(weight, gain)
        layer.bias.zero_()
    return layer


class StackedMLP(nn.Module):
    """``in -> hidden... -> out`` with ``activation`` between layers (none after the last),
    orthogonally initialised: hidden layers with gain sqrt(2), the output with ``out_gain``."""

    def __init__(self, n_sets: int, in_features: int, hidden: Sequence[int], out_features: int, activation: str, out_gain: float) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for size in hidden:
            layers += [orthogonal_(StackedLinear(n_sets, width, size), HIDDEN_GAIN), ACTIVATIONS[activation]()]
            width = size
        layers.append(orthogonal_(StackedLinear(n_sets, width, out_features), out_gain))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
