"""The stacked GRU cell is torch's GRUCell per parameter set; VDN sums; QMIX is monotonic
in every agent's Q-value."""

import torch

from relayrl.nets.gru import RecurrentQNetwork, StackedGRUCell
from relayrl.nets.mixers import QMixer, VDNMixer


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
