"""The stacked GRU cell is torch's GRUCell per parameter set; the whole-sequence recurrence
is the cell stepped with resets and detaches, values and gradients; VDN sums; QMIX is
monotonic in every agent's Q-value."""

import pytest
import torch

from relayrl.nets.gru import GRUSequence, RecurrentQNetwork, StackedGRUCell
from relayrl.nets.mixers import QMixer, VDNMixer
from relayrl.nets.mlp import AgentNet


def test_the_stacked_cell_is_torchs_gru_cell_per_set():
    torch.manual_seed(0)
    stacked = StackedGRUCell(3, 5, 4)
    x, h = torch.randn(3, 7, 5), torch.randn(3, 7, 4)
    out = stacked(x, h)
    for p in range(3):
        ref = torch.nn.GRUCell(5, 4)
        with torch.no_grad():
            ref.weight_ih.copy_(stacked.inputs.weight[p].T)
            ref.bias_ih.copy_(stacked.inputs.bias[p, 0])
            ref.weight_hh.copy_(stacked.hidden.weight[p].T)
            ref.bias_hh.copy_(stacked.hidden.bias[p, 0])
        torch.testing.assert_close(out[p], ref(x[p], h[p]))


def test_the_recurrent_network_carries_its_state():
    net = RecurrentQNetwork(2, 10, 6, hidden_size=8)
    h = net.initial(2, 3)
    x = torch.randn(2, 3, 10)
    q1, h1 = net(x, h)
    q2, _ = net(x, h1)
    assert q1.shape == (2, 3, 6) and h1.shape == (2, 3, 8) and not torch.allclose(q1, q2)


def test_vdn_sums_and_qmix_is_monotonic():
    torch.manual_seed(1)
    q = torch.randn(4, 9, 5, requires_grad=True)
    state = torch.randn(4, 9, 12)
    torch.testing.assert_close(VDNMixer()(q, state), q.sum(-1))
    mixer = QMixer(5, 12)
    total = mixer(q, state)
    assert total.shape == (4, 9)
    (grad,) = torch.autograd.grad(total.sum(), q)
    assert (grad >= 0).all() and (grad > 0).any()


def _stepped(cell: StackedGRUCell, projected: torch.Tensor, h: torch.Tensor, keep: torch.Tensor, cut: torch.Tensor) -> torch.Tensor:
    """The reference: the cell step by step under autograd, the state zeroed where ``keep``
    is False and detached where ``cut`` is True."""
    states = []
    for t in range(projected.shape[1]):
        h = h * keep[:, t].unsqueeze(-1).to(h.dtype)
        h = torch.where(cut[:, t].unsqueeze(-1), h.detach(), h)
        h = cell.step(projected[:, t], h)
        states.append(h)
    return torch.stack(states, 1)


@pytest.mark.parametrize("n_sets", [1, 3])
def test_the_sequence_recurrence_is_the_cell_stepped_with_resets_and_detaches(n_sets):
    """Hidden states equal to the last bit; every gradient (input projections, initial
    state, hidden weights and biases) to rounding, with episodes beginning mid-sequence
    (some rows, and every row at once as fixed-length games end) and detached steps."""
    torch.manual_seed(0)
    cell = StackedGRUCell(n_sets, 7, 16)
    projected = torch.randn(n_sets, 30, 6, 48, requires_grad=True)
    h = torch.randn(n_sets, 6, 16, requires_grad=True)
    keep = torch.rand(n_sets, 30, 6) > 0.1
    keep[:, 12] = False
    cut = torch.rand(n_sets, 30, 6) < 0.1
    weights = torch.randn(n_sets, 30, 6, 16)
    states = cell.unroll(projected, h, keep=keep, cut=cut)
    ours = torch.autograd.grad((states * weights).sum(), [projected, h, cell.hidden.weight, cell.hidden.bias])
    reference = _stepped(cell, projected, h, keep, cut)
    theirs = torch.autograd.grad((reference * weights).sum(), [projected, h, cell.hidden.weight, cell.hidden.bias])
    assert torch.equal(states, reference)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_sequence_recurrence_passes_gradcheck_in_double_precision():
    """Against finite differences (a detach has none, so no cuts here)."""
    torch.manual_seed(1)
    projected = torch.randn(5, 2, 3, 12, dtype=torch.float64, requires_grad=True)  # time-major
    h = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(2, 4, 12, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, 1, 12, dtype=torch.float64, requires_grad=True)
    keep = (torch.rand(5, 2, 3, 1) > 0.3)
    assert torch.autograd.gradcheck(lambda *a: GRUSequence.apply(*a, keep, None), (projected, h, weight, bias))


def test_the_agent_nets_unroll_is_its_step_with_resets():
    torch.manual_seed(0)
    net = AgentNet(2, 7, [16], 5, "tanh", 0.01, recurrent=True)
    x, h = torch.randn(2, 30, 6, 7), torch.randn(2, 6, 16)
    begins = torch.rand(2, 30, 6) < 0.1
    out, states = net.unroll(x, h, begins)
    carry, stepped = h, []
    for t in range(30):
        out_t, carry = net(x[:, t], carry * (~begins[:, t]).unsqueeze(-1).float())
        stepped.append(out_t)
    torch.testing.assert_close(out, torch.stack(stepped, 1), rtol=1e-5, atol=1e-6)
