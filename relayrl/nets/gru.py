"""Recurrent agent networks with P parameter sets (SPEC §1.3-1.4: GRU agents of 64 units,
paper 003's recurrent training).

``StackedGRUCell`` is torch's GRU cell (Cho et al. 2014, as ``torch.nn.GRUCell`` computes
it) for P sets at once; ``RecurrentQNetwork`` is the usual agent network of value
decomposition learners: a linear layer with ReLU, the GRU cell, and a linear head to the
action values. Inputs ``[P, B, in]``, hidden states ``[P, B, hidden]``.
"""

import torch
from torch import nn

from relayrl.nets.stacked import StackedLinear


class StackedGRUCell(nn.Module):
    """h' = (1 - z) * n + z * h with r, z = sigmoid(x W + b + h U + c) and
    n = tanh(x W_n + b_n + r * (h U_n + c_n)), per parameter set."""

    def __init__(self, n_sets: int, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.inputs = StackedLinear(n_sets, input_size, 3 * hidden_size)
        self.hidden = StackedLinear(n_sets, hidden_size, 3 * hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.step(self.inputs(x), h)

    def step(self, projected: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One step from the input's projection ``inputs(x)`` (computed for many steps at once
        by ``RecurrentQNetwork.unroll``)."""
        xr, xz, xn = projected.chunk(3, dim=-1)
        hr, hz, hn = self.hidden(h).chunk(3, dim=-1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1 - z) * n + z * h


def fused_unroll(cell: StackedGRUCell, x: torch.Tensor, h: torch.Tensor, begins: torch.Tensor | None = None) -> torch.Tensor:
    """The recurrence of a one-set cell by torch's fused GRU (the same gates): inputs ``x
    [T, B, in]`` from ``h [B, H]`` -> the hidden state after each step ``[T, B, H]``.
    ``begins [T, B]`` marks steps whose hidden state is zeroed first (an episode's first
    step): the sequence is cut at every step where some row begins, and each piece runs in
    one fused call, so episodes that end together (every copy of a fixed-length game) cost
    a few calls instead of T cell steps."""
    weights = [cell.inputs.weight[0].T, cell.hidden.weight[0].T, cell.inputs.bias[0, 0], cell.hidden.bias[0, 0]]
    if x.is_cuda:  # cuDNN flattens the weights into one buffer and refuses transposed views
        weights = [w.contiguous() for w in weights]
    steps = x.shape[0]
    cuts = [0, steps] if begins is None else sorted({0, steps, *torch.nonzero(begins.any(1)).flatten().tolist()})
    pieces = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if begins is not None:
            h = h * (~begins[lo]).unsqueeze(-1).to(h.dtype)
        out, last = torch.gru(x[lo:hi], h.unsqueeze(0), weights, True, 1, 0.0, cell.training, False, False)
        h = last[0]
        pieces.append(out)
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


class RecurrentQNetwork(nn.Module):
    """obs features ``[P, B, in]`` and hidden ``[P, B, H]`` -> Q-values ``[P, B, A]`` and the
    next hidden state."""

    def __init__(self, n_sets: int, input_size: int, n_actions: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.encoder = StackedLinear(n_sets, input_size, hidden_size)
        self.cell = StackedGRUCell(n_sets, hidden_size, hidden_size)
        self.head = StackedLinear(n_sets, hidden_size, n_actions)

    def initial(self, n_sets: int, batch: int, device: torch.device | None = None) -> torch.Tensor:
        return torch.zeros(n_sets, batch, self.hidden_size, device=device)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.cell(torch.relu(self.encoder(x)), h)
        return self.head(h), h

    def unroll(self, x: torch.Tensor, h: torch.Tensor, cut: torch.Tensor | None = None) -> torch.Tensor:
        """Inputs ``[P, T, B, in]`` from hidden ``h [P, B, H]`` -> Q-values ``[P, T, B, A]``.
        The encoder, the cell's input projections and the head run on all T steps at once;
        only the recurrence goes step by step (the same values as T calls of ``forward``).
        ``cut [T, P, B]`` (or ``[T, P * B]`` with P = 1): rows whose hidden state is detached
        before that step, so no gradient flows back past it (burn-in, truncated BPTT)."""
        p, t, b, _ = x.shape
        encoded = torch.relu(self.encoder(x.reshape(p, t * b, -1)))
        if p == 1 and cut is None:  # one parameter set: torch's fused GRU runs the recurrence (same gates, about 1.2x faster here)
            states = fused_unroll(self.cell, encoded.reshape(t, b, -1), h[0])
            return self.head(states.reshape(1, t * b, -1)).reshape(1, t, b, -1)
        projected = self.cell.inputs(encoded).reshape(p, t, b, -1)
        cuts = cut.reshape(t, p, b, 1).unbind(dim=0) if cut is not None else [None] * t
        states = []
        for step, detach in zip(projected.unbind(dim=1), cuts):  # one backward for all steps (slicing [:, k] costs T full-size gradients)
            if detach is not None and bool(detach.any()):
                h = torch.where(detach, h.detach(), h)
            h = self.cell.step(step, h)
            states.append(h)
        return self.head(torch.stack(states, dim=1).reshape(p, t * b, -1)).reshape(p, t, b, -1)
