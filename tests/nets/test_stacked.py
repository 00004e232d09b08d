"""Stacked layers against per-agent torch references."""

import pytest
import torch
import torch.nn.functional as F

from relayrl.core.errors import ConfigError

from relayrl.nets.qnetwork import QNetwork
from relayrl.nets.stacked import StackedConv2d, groups_to_sets, sets_to_groups


def test_stacked_conv_equals_each_agents_own_convolution():
    torch.manual_seed(0)
    n_sets, batch, k = 3, 4, 2
    conv = StackedConv2d(n_sets, 5, 7, k)
    x = torch.rand(n_sets, batch, 9, 8, 5)  # channel-last, as the envs give it
    out = groups_to_sets(conv(sets_to_groups(x)), n_sets)  # [P, B, H', W', C_out]
    probe = torch.rand_like(out)
    (weight_grad,) = torch.autograd.grad((out * probe).sum(), conv.weight)
    for p in range(n_sets):
        # W rows are ordered (di, dj, c): that is the agent's k x k x C_in kernel
        weight = conv.weight[p].view(k, k, 5, 7).permute(3, 2, 0, 1)
        ref = F.conv2d(x[p].permute(0, 3, 1, 2), weight, conv.bias[p, 0]).permute(0, 2, 3, 1)  # [B, H', W', C_out]
        torch.testing.assert_close(out[p], ref)
        (ref_grad,) = torch.autograd.grad((ref * probe[p]).sum(), conv.weight)
        torch.testing.assert_close(weight_grad[p], ref_grad[p])


def test_group_layout_round_trips():
    x = torch.rand(3, 2, 5, 4, 6)
    grouped = sets_to_groups(x)
    assert grouped.shape == (2, 18, 5, 4)
    torch.testing.assert_close(grouped[:, 6:12].permute(0, 2, 3, 1), x[1])  # set 1's channels
    torch.testing.assert_close(groups_to_sets(grouped, 3), x)


def test_q_network_on_grid_observations_matches_per_agent_networks():
    torch.manual_seed(1)
    stacked = QNetwork(2, (7, 7, 3), 5)
    obs = torch.randint(0, 3, (2, 6, 7, 7, 3), dtype=torch.uint8)
    q = stacked(obs)
    for p in range(2):
        single = QNetwork(1, (7, 7, 3), 5)
        single.load_state_dict({k: v[p : p + 1] for k, v in stacked.state_dict().items()})
        torch.testing.assert_close(q[p : p + 1], single(obs[p : p + 1]))


def test_a_q_network_that_training_cannot_hold_is_refused_before_it_is_allocated():
    """Large screens through the unstrided torso: 1997 x 1997 x 64 features into 64 units are
    16 billion weights per agent, refused with the sizes and the fixes."""
    with pytest.raises(ConfigError, match=r"would hold 16,335,059,300 weights per agent \(2 agents\); training keeps 5 copies .* reads the 2000x2000x3 "
                                          r"observations through unpadded stride-1 2x2 convolutions as 255,232,576 features: shrink the observations"):
        QNetwork(2, (2000, 2000, 3), 3)
