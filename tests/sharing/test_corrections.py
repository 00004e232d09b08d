"""DPS (paper 001, Algorithm 1): divergences against torch.distributions and Monte Carlo,
weights for identical and diverging policies, internal weights, weighted losses."""

import math

import pytest
import torch

from relayrl.sharing.corrections import (
    dps_weight,
    gaussian_jsd,
    gaussian_kl,
    gaussian_sym_kl,
    transition_weights,
    weighted_mean,
)

F64 = torch.float64


def _random_gaussians(batch: int, n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(batch, n, generator=g, dtype=F64)
    a = torch.randn(batch, n, n, generator=g, dtype=F64)
    cov = a @ a.transpose(1, 2) + 0.1 * torch.eye(n, dtype=F64)
    return mu, cov


def _mvn(mu, cov):
    return torch.distributions.MultivariateNormal(mu, covariance_matrix=cov)


def test_kl_matches_torch_distributions():
    mu_p, cov_p = _random_gaussians(5, 4, 0)
    mu_q, cov_q = _random_gaussians(5, 4, 1)
    reference = torch.distributions.kl_divergence(_mvn(mu_p, cov_p), _mvn(mu_q, cov_q))
    torch.testing.assert_close(gaussian_kl(mu_p, cov_p, mu_q, cov_q), reference)


def test_symmetric_kl_is_the_mean_of_both_directions():
    mu_p, cov_p = _random_gaussians(3, 6, 2)
    mu_q, cov_q = _random_gaussians(3, 6, 3)
    p, q = _mvn(mu_p, cov_p), _mvn(mu_q, cov_q)
    reference = 0.5 * (torch.distributions.kl_divergence(p, q) + torch.distributions.kl_divergence(q, p))
    torch.testing.assert_close(gaussian_sym_kl(mu_p, cov_p, mu_q, cov_q), reference)
    torch.testing.assert_close(gaussian_sym_kl(mu_q, cov_q, mu_p, cov_p), reference)


def test_jsd_estimate_matches_a_high_sample_reference_and_is_bounded():
    mu_p, cov_p = _random_gaussians(4, 3, 4)
    mu_q, cov_q = mu_p + 0.5, cov_p * 1.5
    g = torch.Generator().manual_seed(0)
    estimate = gaussian_jsd(mu_p, cov_p, mu_q, cov_q, samples=4096, generator=g)
    p, q = _mvn(mu_p, cov_p), _mvn(mu_q, cov_q)
    torch.manual_seed(1)
    xp, xq = p.sample((400_000,)), q.sample((400_000,))

    def kl_to_mixture(dist, x):
        log_m = torch.logaddexp(p.log_prob(x), q.log_prob(x)) - math.log(2)
        return (dist.log_prob(x) - log_m).mean(0)

    reference = 0.5 * (kl_to_mixture(p, xp) + kl_to_mixture(q, xq))
    torch.testing.assert_close(estimate, reference, atol=0.02, rtol=0.05)
    far = gaussian_jsd(mu_p, cov_p, mu_p + 100.0, cov_p, samples=512, generator=g)
    assert (far <= math.log(2) + 1e-6).all() and (far > math.log(2) - 0.01).all()
    same = gaussian_jsd(mu_p, cov_p, mu_p, cov_p, samples=512, generator=g)
    torch.testing.assert_close(same, torch.zeros(4, dtype=F64), atol=1e-12, rtol=0)


def _batch(offset: float, noise_std: float, k: int = 2, b: int = 4000, n: int = 3, seed: int = 0):
    """External actions = the receiver's own action + offset + Gaussian exploration noise."""
    g = torch.Generator().manual_seed(seed)
    policy = torch.rand(k, b, n, generator=g, dtype=F64) * 2 - 1
    actions = policy + offset + noise_std * torch.randn(k, b, n, generator=g, dtype=F64)
    mask = torch.rand(k, b, generator=g) < 0.5
    return actions, policy, mask


@pytest.mark.parametrize("divergence", ["sym_kl", "kl", "jsd"])
@pytest.mark.parametrize("reference_cov, noise_std", [("std_squared", 0.1), ("sigma", math.sqrt(0.1))])
def test_identical_policies_get_weight_one(divergence, reference_cov, noise_std):
    """Same policy: D is the exploration noise alone, which is the reference Gaussian."""
    actions, policy, mask = _batch(0.0, noise_std)
    g = torch.Generator().manual_seed(0)
    w = dps_weight(actions, policy, mask, 0.1, divergence, reference_cov, jsd_samples=2048, generator=g)
    torch.testing.assert_close(w, torch.ones(2, dtype=F64), atol=0.02, rtol=0)


@pytest.mark.parametrize("divergence", ["sym_kl", "kl", "jsd"])
def test_weights_fall_as_policies_diverge(divergence):
    g = torch.Generator().manual_seed(0)
    weights = []
    for offset in (0.0, 0.05, 0.1, 0.2, 0.4, 0.8):
        actions, policy, mask = _batch(offset, 0.1)
        weights.append(dps_weight(actions, policy, mask, 0.1, divergence, "std_squared", jsd_samples=4096, generator=g)[0].item())
    assert all(a > b for a, b in zip(weights, weights[1:])), weights
    if divergence == "jsd":
        assert min(weights) >= 0.5 - 0.01  # bounded by ln 2: never below 1/2
    else:
        assert weights[-1] < 1e-3


def test_literal_sigma_reference_is_the_default_and_weights_even_the_same_policy_below_one():
    """Paper eq. 7 and the reference code use sigma (0.1) as the covariance: exploration
    noise of std 0.1 (variance 0.01) then differs from the reference."""
    actions, policy, mask = _batch(0.0, 0.1)
    literal = dps_weight(actions, policy, mask, 0.1)
    squared = dps_weight(actions, policy, mask, 0.1, reference_cov="std_squared")
    assert (literal < 0.01).all() and (squared > 0.98).all()


def test_deterministic_identical_actions_do_not_make_the_covariance_singular():
    policy = torch.rand(2, 64, 3)  # float32, as the learners use
    w = dps_weight(policy.clone(), policy, torch.ones(2, 64, dtype=torch.bool), 0.1, "sym_kl")
    assert torch.isfinite(w).all() and (w >= 0).all()


def test_es_dase_and_internal_transitions_have_weight_one():
    actions, policy, mask = _batch(0.8, 0.1)
    torch.testing.assert_close(dps_weight(actions, policy, mask, 0.1, "none"), torch.ones(2, dtype=F64))
    w_ext = dps_weight(actions, policy, mask, 0.1, "sym_kl", "std_squared")
    per = transition_weights(mask, w_ext)
    assert (per[~mask] == 1).all()
    torch.testing.assert_close(per[0][mask[0]], w_ext[0].expand(int(mask[0].sum())))


def test_weighted_loss_equals_the_unweighted_one_when_all_weights_are_one():
    values = torch.rand(3, 256, dtype=F64)
    torch.testing.assert_close(weighted_mean(values, torch.ones(3, 256, dtype=F64)), values.mean(-1))
    w = torch.rand(3, 256, dtype=F64)
    torch.testing.assert_close(weighted_mean(values, w), (w * values).sum(-1) / w.sum(-1))
