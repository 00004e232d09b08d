"""Recurrent agent networks with P parameter sets (SPEC §1.3-1.4: GRU agents of 64 units,
paper 003's recurrent training).

``StackedGRUCell`` is torch's GRU cell (Cho et al. 2014, as ``torch.nn.GRUCell`` computes
it) for P sets at once; ``RecurrentQNetwork`` is the usual agent network of value
decomposition learners: a linear layer with ReLU, the GRU cell, and a linear head to the
action values. Inputs ``[P, B, in]``, hidden states ``[P, B, hidden]``.
"""

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from relayrl.nets import native
from relayrl.nets.stacked import StackedLinear


class StackedGRUCell(nn.Module):
    """h' = (1 - z) * n + z * h with r, z = sigmoid(x W + b + h U + c) and
    n = tanh(x W_n + b_n + r * (h U_n + c_n)), per parameter set."""

    def __init__(self, n_sets: int, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.inputs = StackedLinear(n_sets, input_size, 3 * hidden_size, inner=True)
        self.hidden = StackedLinear(n_sets, hidden_size, 3 * hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.step(self.inputs(x).float(), h)

    def step(self, projected: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One step from the input's projection ``inputs(x)`` as float32 (computed for many
        steps at once by ``RecurrentQNetwork.unroll``; the recurrence computes in float32,
        ``relayrl.nets.precision``)."""
        xr, xz, xn = projected.chunk(3, dim=-1)
        hr, hz, hn = self.hidden(h).chunk(3, dim=-1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1 - z) * n + z * h

    def unroll(self, projected: torch.Tensor, h: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """The recurrence over T steps: input projections ``[P, T, B, 3H]`` from ``h [P, B,
        H]`` -> the hidden state after each step ``[P, T, B, H]`` (``GRUSequence``).
        ``keep [P, T, B]`` (bool) zeroes the hidden state of the rows it leaves out before
        that step (an episode's first step)."""
        time_major = projected.float().transpose(0, 1).contiguous()
        flag = None if keep is None else keep.transpose(0, 1).unsqueeze(-1)
        return GRUSequence.apply(time_major, h, self.hidden.weight, self.hidden.bias, flag).transpose(0, 1)


class GRUSequence(torch.autograd.Function):
    """The GRU recurrence over a whole sequence as one autograd node, with its
    backpropagation through time written out: per step one batched matmul each way and the
    gates' arithmetic, where the autograd graph of T cell steps records and replays about
    30 operations. The weight's gradient is one product over all steps. The forward values
    are torch's GRU's (same operations in the same order); gradients differ from autograd's
    only in the order of summation. The loops over time run in C++ where a compiler is
    present (``relayrl.nets.native``: the same operations, the same values to the last bit;
    1.4-2.3x the Python loops here), else in Python. It pays where sequences are long and
    rows few, as in the policy-gradient learners' chunks (12 rows of 128 steps, GRU 128);
    value decomposition's agents keep torch's GRU's values and gradients (``fused_unroll``,
    whose node is ``FusedOrderGRU``; docs/results/benchmarks_marl.md).

    Inputs (time-major): ``projected [T, P, B, 3H]`` (x W + b), ``h0 [P, B, H]``, the hidden
    layer's ``weight [P, H, 3H]`` and ``bias [P, 1, 3H]``, ``keep [T, P, B, 1]`` (bool, or
    None). Output: hidden states ``[T, P, B, H]``."""

    @staticmethod
    def forward(ctx, projected, h0, weight, bias, keep):  # type: ignore[override]
        keep_f = None if keep is None else keep.to(projected.dtype).contiguous()
        ops = _native(projected)
        loop = _forward_loop if ops is None else ops.forward
        states, gates, hidden_proj, news, before = loop(projected.contiguous(), h0.contiguous(), weight, bias, keep_f)
        ctx.save_for_backward(before, gates, hidden_proj, news, weight, keep_f)
        return states

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_states):  # type: ignore[override]
        before, gates, hidden_proj, news, weight, keep_f = ctx.saved_tensors
        ops = _native(d_states)
        loop = _backward_loop if ops is None else ops.backward
        d_projected, d_hidden_proj, dh = loop(d_states.contiguous(), before, gates, hidden_proj, news, weight, keep_f)
        n_sets, hidden = weight.shape[0], weight.shape[1]
        rows = before.transpose(0, 1).reshape(n_sets, -1, hidden)
        d_weight = torch.bmm(rows.transpose(1, 2), d_hidden_proj.transpose(0, 1).reshape(n_sets, -1, 3 * hidden))
        d_bias = d_hidden_proj.sum(dim=(0, 2)).unsqueeze(1)
        return d_projected, dh, d_weight, d_bias, None


def _native(tensor: torch.Tensor) -> Any:
    """The C++ loops (``relayrl.nets.native``) for float32 CPU tensors, else None."""
    if tensor.device.type != "cpu" or tensor.dtype != torch.float32:
        return None
    return native.gru_ops()


def _forward_loop(projected, h0, weight, bias, keep_f):
    """GRUSequence's forward loop in Python (``gru_sequence.cpp`` runs the same operations)."""
    hidden = h0.shape[-1]
    states = projected.new_empty(*projected.shape[:-1], hidden)
    gates = projected.new_empty(*projected.shape[:-1], 2 * hidden)  # r, z
    hidden_proj = torch.empty_like(projected)  # h U + c
    news = torch.empty_like(states)
    # every step's views, made once (indexing inside the loop costs more than the math)
    x_rz, x_n = projected[..., : 2 * hidden].unbind(0), projected[..., 2 * hidden :].unbind(0)
    hp_all, hp_rz, hp_n = hidden_proj.unbind(0), hidden_proj[..., : 2 * hidden].unbind(0), hidden_proj[..., 2 * hidden :].unbind(0)
    rz_all, r_all, z_all = gates.unbind(0), gates[..., :hidden].unbind(0), gates[..., hidden:].unbind(0)
    keeps = [None] * len(x_rz) if keep_f is None else keep_f.unbind(0)
    h = h0
    for t, (n, out) in enumerate(zip(news.unbind(0), states.unbind(0))):
        if keeps[t] is not None:
            h = h * keeps[t]
        torch.baddbmm(bias, h, weight, out=hp_all[t])
        torch.add(hp_rz[t], x_rz[t], out=rz_all[t]).sigmoid_()
        torch.mul(hp_n[t], r_all[t], out=n).add_(x_n[t]).tanh_()
        h = torch.sub(h, n, out=out).mul_(z_all[t]).add_(n)
    before = torch.cat([h0.unsqueeze(0), states[:-1]])  # the hidden state each step starts from
    if keep_f is not None:
        before = before * keep_f
    return states, gates, hidden_proj, news, before


def _backward_loop(d_states, before, gates, hidden_proj, news, weight, keep_f):
    """GRUSequence's loop back through time in Python (``gru_sequence.cpp`` runs the same
    operations): the gradients of the input projection, of the hidden projection and of h0.
    Every coefficient that does not depend on the incoming gradient is computed for all
    steps at once."""
    hidden = d_states.shape[-1]
    r, z = gates[..., :hidden], gates[..., hidden:]
    dz_coef = ((before - news) * z * (1 - z)).unbind(0)  # d pre-activation of z per d h'
    dn_coef = ((1 - z) * (1 - news * news)).unbind(0)  # d pre-activation of n per d h'
    dr_coef = (hidden_proj[..., 2 * hidden :] * r * (1 - r)).unbind(0)  # d pre-activation of r per d pre-activation of n
    d_hidden_proj = torch.empty_like(hidden_proj)  # its r and z parts are also the input projection's
    d_n = torch.empty_like(d_states)
    d_hp, d_r, d_z, d_hn = (d_hidden_proj[..., part].unbind(0) for part in (slice(None), slice(0, hidden), slice(hidden, 2 * hidden), slice(2 * hidden, None)))
    r_all, z_all, d_out = r.unbind(0), z.unbind(0), d_states.unbind(0)
    keeps = [None] * len(d_out) if keep_f is None else keep_f.unbind(0)
    weight_t = weight.transpose(1, 2)
    dh = d_out[-1].clone()
    for t, dn in reversed(list(enumerate(d_n.unbind(0)))):
        torch.mul(dh, dn_coef[t], out=dn)
        torch.mul(dn, dr_coef[t], out=d_r[t])
        torch.mul(dh, dz_coef[t], out=d_z[t])
        torch.mul(dn, r_all[t], out=d_hn[t])
        dh = torch.baddbmm(dh * z_all[t], d_hp[t], weight_t)
        if keeps[t] is not None:
            dh.mul_(keeps[t])
        if t > 0:
            dh.add_(d_out[t - 1])
    d_projected = torch.cat([d_hidden_proj[..., : 2 * hidden], d_n], dim=-1)
    return d_projected, d_hidden_proj, dh


class FusedOrderGRU(torch.autograd.Function):
    """The recurrence of one parameter set as one node whose values and gradients are torch's
    own GRU's (``torch.gru`` on the CPU) to the last bit: the forward loop of
    ``GRUSequence`` in C++ (the same operations as torch's GRU cell), and a backward loop
    that computes and sums in the order torch's autograd graph of that GRU does
    (``backward_fused_order`` in ``gru_sequence.cpp``). Inputs ``projected [T, B, 3H]`` (the
    input projection, computed as torch's GRU computes it), ``h0 [B, H]``, the hidden
    layer's ``weight [H, 3H]`` and ``bias [3H]``; output ``[T, B, H]``."""

    @staticmethod
    def forward(ctx, projected, h0, weight, bias):  # type: ignore[override]
        ops = native.gru_ops()
        states, gates, hidden_proj, news, before = ops.forward_fused_order(
            projected.unsqueeze(1).contiguous(), h0.unsqueeze(0).contiguous(), weight.unsqueeze(0), bias.reshape(1, 1, -1)
        )
        ctx.save_for_backward(before, gates, hidden_proj, news, weight)
        return states.squeeze(1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_states):  # type: ignore[override]
        before, gates, hidden_proj, news, weight = ctx.saved_tensors
        d_projected, d_weight, d_bias, dh = native.gru_ops().backward_fused_order(
            d_states.unsqueeze(1).contiguous(), before, gates, hidden_proj, news, weight.unsqueeze(0)
        )
        return d_projected.squeeze(1), dh[0], d_weight, d_bias


def fused_unroll(cell: StackedGRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """The recurrence of a one-set cell by torch's fused GRU (the same gates): inputs ``x
    [T, B, in]`` from ``h [B, H]`` -> the hidden state after each step ``[T, B, H]``. On the
    CPU with relayrl's C++ loops, ``FusedOrderGRU`` computes the same values and gradients
    (QMIX's update 1.12-1.20x: docs/results/benchmarks_marl.md)."""
    x = x.float()  # the recurrence computes in float32 (``relayrl.nets.precision``)
    if _native(x) is not None:
        projected = F.linear(x, cell.inputs.weight[0].T, cell.inputs.bias[0, 0])  # the call torch's GRU makes for its input projection
        return FusedOrderGRU.apply(projected, h, cell.hidden.weight[0], cell.hidden.bias[0, 0])
    weights = [cell.inputs.weight[0].T, cell.hidden.weight[0].T, cell.inputs.bias[0, 0], cell.hidden.bias[0, 0]]
    if x.is_cuda:  # cuDNN flattens the weights into one buffer and refuses transposed views
        weights = [w.contiguous() for w in weights]
    out, _ = torch.gru(x, h.unsqueeze(0), weights, True, 1, 0.0, cell.training, False, False)
    return out


class RecurrentQNetwork(nn.Module):
    """obs features ``[P, B, in]`` and hidden ``[P, B, H]`` -> Q-values ``[P, B, A]`` and the
    next hidden state."""

    def __init__(self, n_sets: int, input_size: int, n_actions: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.encoder = StackedLinear(n_sets, input_size, hidden_size, inner=True)
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
        projected = self.cell.inputs(encoded).float().reshape(p, t, b, -1)
        cuts = cut.reshape(t, p, b, 1).unbind(dim=0) if cut is not None else [None] * t
        states = []
        for step, detach in zip(projected.unbind(dim=1), cuts):  # one backward for all steps (slicing [:, k] costs T full-size gradients)
            if detach is not None and bool(detach.any()):
                h = torch.where(detach, h.detach(), h)
            h = self.cell.step(step, h)
            states.append(h)
        return self.head(torch.stack(states, dim=1).reshape(p, t * b, -1)).reshape(p, t, b, -1)
