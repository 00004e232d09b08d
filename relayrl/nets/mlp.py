"""The networks of policy-gradient learners, P parameter sets ``[P, ...]`` on inputs
``[P, B, in]``: an MLP body, optionally a GRU cell after it (the agent's memory through an
episode), and a linear head. Orthogonal initialisation (Saxe et al. 2014) with the gains of
Andrychowicz et al. 2021 ("What matters in on-policy RL"): sqrt(2) for hidden layers, 0.01
for the policy's output, 1 for the value's.
"""

import math
from collections.abc import Sequence

import torch
from torch import nn

from relayrl.nets.gru import StackedGRUCell
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


class AgentNet(nn.Module):
    """``in -> hidden... (activation after each) [-> GRU] -> out``."""

    def __init__(self, n_sets: int, in_features: int, hidden: Sequence[int], out_features: int, activation: str, out_gain: float, recurrent: bool = False) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for size in hidden:
            layers += [orthogonal_(StackedLinear(n_sets, width, size, inner=True), HIDDEN_GAIN), ACTIVATIONS[activation]()]
            width = size
        self.body = nn.Sequential(*layers)
        self.cell = StackedGRUCell(n_sets, width, width) if recurrent else None
        self.hidden_size = width
        self.head = orthogonal_(StackedLinear(n_sets, width, out_features), out_gain)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x [P, M, in]`` (and the hidden state ``h [P, M, H]`` of a recurrent net) ->
        outputs ``[P, M, out]`` and the hidden state after the step."""
        features = self.body(x)
        if self.cell is None:
            return self.head(features), None
        assert h is not None
        h = self.cell(features, h)
        return self.head(h), h

    def unroll(self, x: torch.Tensor, h: torch.Tensor, begins: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``[P, L, B, in]`` from hidden ``h [P, B, H]``, the hidden state zeroed before
        the steps ``begins [P, L, B]`` marks (an episode's first step) -> outputs ``[P, L, B,
        out]`` and the hidden states after each step ``[P, L, B, H]``. The body and head run
        on all steps at once; only the recurrence goes step by step, in one autograd node
        (``GRUSequence``: these chunks are long and their rows few)."""
        assert self.cell is not None
        p, steps, b, _ = x.shape
        projected = self.cell.inputs(self.body(x.reshape(p, steps * b, -1))).reshape(p, steps, b, -1)
        stacked = self.cell.unroll(projected, h, keep=~begins if bool(begins.any()) else None)
        return self.head(stacked.reshape(p, steps * b, -1)).reshape(p, steps, b, -1), stacked
