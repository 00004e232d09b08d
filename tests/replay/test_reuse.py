"""AccMER's reuse sampler: alpha 0 is uniform, alpha 1 reuses only, the reuse set is the top
of the weight table and changes only every period, S+ stays outside S-, each sampled slot
gets its own weight back, and the table decays."""

import numpy as np
import pytest

from relayrl.replay.reuse import ReuseSampler, largest


def test_alpha_zero_is_uniform_without_replacement():
    sampler = ReuseSampler(100, 10, alpha=0.0, seed=0)
    sampler.update(np.arange(10), np.arange(10.0) * 100)  # weights do not matter
    counts = np.zeros(100)
    for _ in range(3000):
        slots = sampler.sample(100)
        assert len(set(slots.tolist())) == 10
        counts[slots] += 1
    assert counts.min() > 0.8 * counts.mean() and counts.max() < 1.2 * counts.mean()


def test_alpha_one_reuses_the_top_weights_only():
    sampler = ReuseSampler(100, 8, alpha=1.0, seed=0)
    weights = np.random.default_rng(1).random(100)
    sampler.update(np.arange(100), weights)
    assert sorted(sampler.sample(100).tolist()) == sorted(np.argsort(-weights)[:8].tolist())


def test_the_reuse_set_is_kept_for_a_period_and_stays_out_of_the_fresh_draws():
    sampler = ReuseSampler(64, 8, alpha=0.5, seed=0)  # period floor(64 / 8) = 8
    assert sampler.period == 8
    weights = np.random.default_rng(2).random(64)
    sampler.update(np.arange(64), weights)
    first = sampler.sample(64)
    reused = set(first[:4].tolist())
    assert reused == set(np.argsort(-weights)[:4].tolist())  # partial selection = the top 4
    for _ in range(7):  # the same S- until the period ends, whatever the new weights
        slots = sampler.sample(64)
        sampler.update(slots, np.full(8, 0.0))
        assert set(slots[:4].tolist()) == reused and not reused & set(slots[4:].tolist())
    sampler.update(np.arange(64), np.arange(64.0))
    assert set(sampler.sample(64)[:4].tolist()) == {60, 61, 62, 63}  # refreshed after 8 batches


def test_the_reuse_set_is_one_set_in_slot_order_whatever_the_ties():
    # a table like AccMER's without decay: many slots still at the initial weight
    rng = np.random.default_rng(3)
    for trial in range(50):
        weights = np.ones(2000)
        written = rng.choice(2000, int(rng.integers(0, 2000)), replace=False)
        weights[written] = rng.choice([0.5, 1.0, 2.0, 3.0], written.size) if trial % 2 else rng.random(written.size) * 3
        for k in (1, 64, 128, 1999):
            expected = np.sort(np.argsort(-weights, kind="stable")[:k])  # ties to the lower slot
            np.testing.assert_array_equal(largest(weights, k), expected)
    assert largest(np.ones(5), 8).tolist() == [0, 1, 2, 3, 4] and largest(np.ones(5), 0).size == 0


def test_each_slot_gets_its_own_weight_and_the_table_decays():
    sampler = ReuseSampler(10, 4, alpha=0.5, decay=0.8, seed=0)
    sampler.update(np.array([3, 7, 1, 9]), np.array([5.0, 6.0, 7.0, 8.0]))
    expected = np.full(10, 0.8)
    expected[[3, 7, 1, 9]] = np.array([5.0, 6.0, 7.0, 8.0]) * 0.8
    np.testing.assert_allclose(sampler.weights, expected)
    sampler.written(np.array([7]))
    assert sampler.weights[7] == 1.0


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="alpha"):
        ReuseSampler(10, 4, alpha=1.5)
    with pytest.raises(ValueError, match="decay"):
        ReuseSampler(10, 4, decay=0.0)
    with pytest.raises(ValueError, match="fewer than a batch"):
        ReuseSampler(10, 4).sample(3)
