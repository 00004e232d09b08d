"""MAC-PO's f(pi) by hand on small cases, and the Lemma 1 weights."""

import pytest
import torch

from relayrl.algos.macpo import joint_action_factor, macpo_weights, taken_action_probability


@pytest.mark.parametrize(
    "pi, expected",
    [
        ([1.0, 1.0], 1.0),  # 1 + (1 + 1) - 2 * 1
        ([0.5, 0.5], 1.5),  # 1 + (0.5 + 0.5) - 2 * 0.25
        ([0.2, 0.9], 1 + 0.9 + 0.2 - 2 * 0.18),
        ([1.0, 1.0, 0.0], 2.0),  # only the product without the zero survives: 1 + 1 - 0
        ([0.5, 0.5, 0.5], 1 + 3 * 0.25 - 3 * 0.125),
        ([0.0, 0.0, 0.3], 1.0),
    ],
)
def test_joint_action_factor_by_hand(pi, expected):
    assert joint_action_factor(torch.tensor(pi, dtype=torch.float64)).item() == pytest.approx(expected)


def test_the_factor_is_largest_when_one_agent_differs():
    """Paper 002: f peaks when one agent's action probability is small and the others' large."""
    assert joint_action_factor(torch.tensor([1.0, 1.0, 0.0])) > joint_action_factor(torch.tensor([0.5, 0.5, 0.5]))
    assert joint_action_factor(torch.tensor([1.0, 1.0, 0.0])) > joint_action_factor(torch.tensor([1.0, 1.0, 1.0]))


def test_weights_follow_lemma_1_and_average_one():
    q_tot = torch.tensor([1.0, 2.0, 0.0, 5.0])
    target = torch.tensor([0.0, 2.5, 1.0, 0.0])
    q_star = torch.tensor([1.0, 1.0, 3.0, 0.0])
    pi = torch.tensor([[0.5, 0.5], [1.0, 1.0], [0.2, 0.9], [0.3, 0.3]])
    mask = torch.tensor([1.0, 1.0, 1.0, 0.0])
    raw = (q_tot - target).abs() * torch.exp(-(q_tot - q_star).abs()) * joint_action_factor(pi) * mask
    w = macpo_weights(q_tot, target, q_star, pi, mask)
    torch.testing.assert_close(w, raw * 3 / raw.sum())
    assert w[3] == 0 and w[:3].mean().item() == pytest.approx(1.0)


def test_taken_action_probability_respects_the_masks():
    q = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]])
    actions = torch.tensor([[1, 0]])
    available = torch.tensor([[[True, True, False], [True, True, True]]])
    pi = taken_action_probability(q, actions, available)
    torch.testing.assert_close(pi, torch.tensor([[torch.softmax(torch.tensor([1.0, 2.0]), 0)[1].item(), 1 / 3]]))


def test_padding_after_an_episode_does_not_turn_the_weights_uniform():
    """Steps after an episode's end allow no action; their pi must not be NaN, and the
    weights of the real steps must stay Lemma 1's (a NaN there once made every weight 1)."""
    q = torch.tensor([[[1.0, 2.0], [0.5, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])  # [T=2, N=2, A=2]; step 1 is padding
    available = torch.tensor([[[True, True], [True, True]], [[False, False], [False, False]]])
    pi = taken_action_probability(q, torch.tensor([[1, 0], [0, 0]]), available)
    assert torch.isfinite(pi).all()
    mask = torch.tensor([1.0, 0.0])
    w = macpo_weights(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]), pi, mask)
    torch.testing.assert_close(w, torch.tensor([1.0, 0.0]))
    w = macpo_weights(torch.tensor([1.0, 3.0, 0.0]), torch.tensor([0.0, 0.0, 0.0]), torch.tensor([1.0, 3.0, 0.0]),
                      torch.tensor([[0.5, 0.5], [0.5, 0.5], [float("nan"), float("nan")]]), torch.tensor([1.0, 1.0, 0.0]))
    torch.testing.assert_close(w, torch.tensor([0.5, 1.5, 0.0]))  # |td| 1 and 3 with equal f: not uniform
