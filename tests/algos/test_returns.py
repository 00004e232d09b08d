"""TD(lambda) targets against the direct sum of n-step returns (SPEC §1.4)."""

import numpy as np
import pytest
import torch

from relayrl.algos.returns import td_lambda_targets


def _direct(reward, next_value, terminated, truncated, length, gamma, lam):
    """R_t = (1 - lam) sum_{n=1}^{L-t-1} lam^{n-1} G_t^(n) + lam^{L-t-1} G_t^(L-t), with
    G_t^(n) the n-step return bootstrapped on next_value[t+n-1] (not past a termination)."""
    out = np.zeros(len(reward))
    for t in range(length):
        def g(n):
            ret = sum(gamma**j * reward[t + j] for j in range(n))
            end = t + n - 1
            if not (end == length - 1 and terminated[end]):
                ret += gamma**n * next_value[end]
            return ret
        horizon = length - t
        out[t] = (1 - lam) * sum(lam ** (n - 1) * g(n) for n in range(1, horizon)) + lam ** (horizon - 1) * g(horizon)
    return out


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_the_recursion_equals_the_direct_sum(lam):
    rng = np.random.default_rng(0)
    batch, steps, gamma = 6, 9, 0.99
    reward = rng.normal(size=(batch, steps))
    next_value = rng.normal(size=(batch, steps))
    lengths = rng.integers(1, steps + 1, batch)
    lengths[0] = steps  # one episode fills the batch's time axis
    terminated = np.zeros((batch, steps), bool)
    truncated = np.zeros((batch, steps), bool)
    for b, length in enumerate(lengths):
        (terminated if b % 2 else truncated)[b, length - 1] = True
    mask = np.arange(steps)[None] < lengths[:, None]
    targets = td_lambda_targets(*(torch.as_tensor(x) for x in (reward, next_value, terminated, truncated, mask)), gamma, lam).numpy()
    for b, length in enumerate(lengths):
        expected = _direct(reward[b], next_value[b], terminated[b], truncated[b], length, gamma, lam)
        np.testing.assert_allclose(targets[b, :length], expected[:length], rtol=1e-10, atol=1e-10)
        assert (targets[b, length:] == 0).all()


def test_trailing_axes_and_an_unfinished_window():
    """Agent axes ride along; a window cut before its episode ends bootstraps at its end."""
    reward = torch.ones(2, 3, 4)
    next_value = torch.full((2, 3, 4), 10.0)
    flags = torch.zeros(2, 3, 4, dtype=torch.bool)
    mask = torch.ones(2, 3, 4)
    out = td_lambda_targets(reward, next_value, flags, flags, mask, 0.5, 0.5)
    # no end flag and no padding after the last step: it bootstraps like a truncation
    assert torch.allclose(out[:, 2], torch.full((2, 4), 1 + 0.5 * 10))
    assert torch.allclose(out[:, 1], 1 + 0.5 * (0.5 * out[:, 2] + 0.5 * 10))
