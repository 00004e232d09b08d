"""GAE(lambda) over a rollout against a plain step-by-step reference, and the n-step returns
it gives with lambda = 1, for terminations, truncations and episodes that run past the
rollout's end."""

import numpy as np
import pytest
import torch

from relayrl.algos.advantages import gae


def _reference(rewards, values, next_values, terminated, over, gamma, lam):
    """The recursion as written in Schulman et al. 2016, one step and one column at a time."""
    advantages = np.zeros_like(rewards)
    for column in np.ndindex(rewards.shape[1:]):
        following = 0.0
        for t in reversed(range(rewards.shape[0])):
            i = (t, *column)
            delta = rewards[i] + gamma * (1.0 - terminated[i]) * next_values[i] - values[i]
            following = delta + gamma * lam * (1.0 - over[i]) * following
            advantages[i] = following
    return advantages


@pytest.mark.parametrize("lam", [0.0, 0.95, 1.0])
def test_gae_equals_the_step_by_step_recursion(lam):
    rng = np.random.default_rng(0)
    shape = (17, 3, 4)  # T steps, E copies, N entities
    rewards, values, next_values = (rng.normal(size=shape) for _ in range(3))
    terminated = rng.random(shape) < 0.1
    over = terminated | (rng.random(shape) < 0.1)  # truncations end episodes too, bootstrapping
    advantages, returns = gae(*(torch.as_tensor(a) for a in (rewards, values, next_values, terminated, over)), 0.99, lam)
    expected = _reference(rewards, values, next_values, terminated, over, 0.99, lam)
    np.testing.assert_allclose(advantages.numpy(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(returns.numpy(), expected + values, rtol=1e-10, atol=1e-12)


def test_lambda_one_gives_the_n_step_returns_by_hand():
    """Three steps of one entity: an episode that terminates at step 1 (no bootstrap), one
    truncated at step 2 (bootstraps from its final observation's value 10)."""
    rewards = torch.tensor([1.0, 2.0, 4.0])
    values = torch.tensor([0.5, 0.5, 0.5])
    next_values = torch.tensor([0.5, 99.0, 10.0])  # the next step's value within an episode; 99: after a termination, never read
    terminated = torch.tensor([False, True, False])
    over = torch.tensor([False, True, True])
    _, returns = gae(rewards, values, next_values, terminated, over, 0.5, 1.0)
    assert returns.tolist() == [1.0 + 0.5 * 2.0, 2.0, 4.0 + 0.5 * 10.0]
