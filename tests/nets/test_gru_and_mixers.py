"""The stacked GRU cell is torch's GRUCell per parameter set; the unrolls (torch's fused GRU,
the whole-sequence node) are the cell stepped with resets, values and gradients; VDN sums;
QMIX is monotonic in every agent's Q-value."""

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


def test_the_agent_nets_unroll_is_the_cell_step_by_step_with_resets():
    """The same hidden states, outputs and gradients as the cell stepped with the state
    zeroed where some rows (and, at step 12, every row) begin an episode."""
    torch.manual_seed(0)
    net = AgentNet(1, 7, [16], 5, "tanh", 0.01, recurrent=True)
    x, h = torch.randn(1, 30, 6, 7), torch.randn(1, 6, 16)
    begins = torch.rand(1, 30, 6) < 0.1
    begins[0, 12] = True  # every row at once, as fixed-length games end
    out, states = net.unroll(x, h, begins)
    out.square().sum().backward()
    fused = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    keep, carry, stepped = (~begins).unsqueeze(-1).float(), h, []
    for t in range(30):
        carry = net.cell(net.body(x[:, t]), carry * keep[:, t])
        stepped.append(carry)
    reference = torch.stack(stepped, 1)
    outputs = net.head(reference.reshape(1, 30 * 6, 16)).reshape(1, 30, 6, 5)
    outputs.square().sum().backward()
    torch.testing.assert_close(states, reference, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out, outputs, rtol=1e-5, atol=1e-6)
    for a, p in zip(fused, net.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("n_sets", [1, 3])
def test_the_sequence_node_gives_the_gradients_of_the_cell_stepped_under_autograd(n_sets):
    """Every gradient (input projections, initial state, hidden weights and biases) against
    autograd through the cell stepped with resets, and the fused GRU's hidden states."""
    torch.manual_seed(0)
    cell = StackedGRUCell(n_sets, 7, 16)
    projected = torch.randn(n_sets, 30, 6, 48, requires_grad=True)
    h = torch.randn(n_sets, 6, 16, requires_grad=True)
    keep = torch.rand(n_sets, 30, 6) > 0.1
    keep[:, 12] = False
    weights = torch.randn(n_sets, 30, 6, 16)
    states = cell.unroll(projected, h, keep=keep)
    ours = torch.autograd.grad((states * weights).sum(), [projected, h, cell.hidden.weight, cell.hidden.bias])
    carry, stepped = h, []
    for t in range(30):
        carry = cell.step(projected[:, t], carry * keep[:, t].unsqueeze(-1).float())
        stepped.append(carry)
    reference = torch.stack(stepped, 1)
    theirs = torch.autograd.grad((reference * weights).sum(), [projected, h, cell.hidden.weight, cell.hidden.bias])
    torch.testing.assert_close(states, reference, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_sequence_node_passes_gradcheck_in_double_precision():
    torch.manual_seed(1)
    projected = torch.randn(5, 2, 3, 12, dtype=torch.float64, requires_grad=True)  # time-major
    h = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(2, 4, 12, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, 1, 12, dtype=torch.float64, requires_grad=True)
    keep = torch.rand(5, 2, 3, 1) > 0.3
    assert torch.autograd.gradcheck(lambda *a: GRUSequence.apply(*a, keep), (projected, h, weight, bias))
