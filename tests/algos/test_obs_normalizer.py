"""DDPG's running observation normalisation (paper 001, Table 2): exact running moments
per agent, masked rows left out, clipping and the variance floor, and learners that see
normalised states everywhere."""

import numpy as np
import pytest
import torch

from relayrl.algos.obs_normalizer import MIN_VARIANCE, OBS_CLIP, ObsNormalizer
from relayrl.algos.td3 import TD3, TD3Params


def test_running_moments_equal_the_moments_of_all_valid_rows():
    rng = np.random.default_rng(0)
    normalizer = ObsNormalizer(2, 3, torch.device("cpu"))
    seen: list[list[np.ndarray]] = [[], []]
    for step in range(6):
        obs = rng.normal(loc=[1.0, -2.0, 5.0], scale=[0.5, 2.0, 3.0], size=(2, 7, 3))
        mask = rng.random((2, 7)) < 0.7
        mask[1] = step % 2 == 0  # agent 1 sees nothing every other step
        normalizer.update(obs, mask)
        for p in range(2):
            seen[p].append(obs[p][mask[p]])
    for p in range(2):
        rows = np.concatenate(seen[p])
        assert normalizer.count[p] == pytest.approx(len(rows), abs=1e-3)
        np.testing.assert_allclose(normalizer.mean[p], rows.mean(axis=0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(normalizer.var[p], rows.var(axis=0), rtol=1e-4, atol=1e-4)


def test_normalised_values_are_clipped_and_the_std_has_a_floor():
    normalizer = ObsNormalizer(1, 2, torch.device("cpu"))
    normalizer.update(np.array([[[0.0, 0.0], [0.0, 2.0]]]))  # feature 0 constant: variance 0
    out = normalizer(torch.tensor([[[0.05, 1.0], [100.0, -100.0]]]))
    assert out[0, 0, 0].item() == pytest.approx(0.05 / MIN_VARIANCE**0.5, rel=1e-5)
    assert out[0, 0, 1].item() == pytest.approx(0.0, abs=1e-3)  # the mean 1, up to the tiny initial count
    assert out[0, 1].tolist() == [OBS_CLIP, -OBS_CLIP]


def test_a_normalising_learner_acts_and_learns_on_normalised_states():
    settings = TD3Params(hidden=(8,), normalize_obs=True, exploration_noise=0.0)
    learner = TD3(2, 3, [-1.0], [1.0], settings, torch.device("cpu"), 0)
    rng = np.random.default_rng(1)
    learner.observe(rng.normal(loc=10.0, size=(2, 50, 3)).astype(np.float32))
    obs = rng.normal(loc=10.0, size=(2, 4, 3)).astype(np.float32)
    expected = learner.policy(learner.obs_normalizer(torch.as_tensor(obs))).detach().numpy()
    np.testing.assert_allclose(learner.act(obs, None, 0.0)[0], expected, rtol=1e-6)
    batch = {"obs": obs, "action": np.zeros((2, 4, 1), np.float32), "reward": np.ones((2, 4), np.float32), "next_obs": obs, "discount": np.zeros((2, 4), np.float32)}
    t = learner.tensors(batch)
    assert t["obs"].abs().max() < 5.0 and torch.equal(t["obs"], learner.obs_normalizer(torch.as_tensor(obs)))


def test_statistics_travel_with_the_policy_and_a_mismatch_is_refused():
    normalizing = TD3(1, 3, [-1.0], [1.0], TD3Params(hidden=(8,), normalize_obs=True), torch.device("cpu"), 0)
    normalizing.observe(np.full((1, 5, 3), 4.0, np.float32))
    copy = TD3(1, 3, [-1.0], [1.0], TD3Params(hidden=(8,), normalize_obs=True), torch.device("cpu"), 1)
    copy.load_policy_state(normalizing.policy_state())
    np.testing.assert_array_equal(copy.obs_normalizer.mean, normalizing.obs_normalizer.mean)
    plain = TD3(1, 3, [-1.0], [1.0], TD3Params(hidden=(8,)), torch.device("cpu"), 0)
    with pytest.raises(ValueError, match="normalize_obs"):
        plain.load_state_dict(normalizing.state_dict())
