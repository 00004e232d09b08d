"""SumTree against brute-force numpy: totals, minima, prefix-sum search, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from relayrl.replay.sum_tree import SumTree

# (n_trees, capacity, branching, max_top): depth 0 (top level only) up to depth 4.
LAYOUTS = [
    (3, 1000, 16, 1024),
    (1, 120_000, 16, 1024),
    (2, 5000, 16, 1024),
    (3, 1000, 4, 8),
    (2, 5, 2, 1),
    (1, 1, 4, 1),
    (2, 777, 8, 4),
]


def positive_min(ref: np.ndarray) -> np.ndarray:
    return np.where(ref > 0, ref, np.inf).min(axis=1)


def check_against(tree: SumTree, ref: np.ndarray, rng: np.random.Generator) -> None:
    totals = ref.sum(axis=1)
    np.testing.assert_array_equal(tree.total(), totals)
    np.testing.assert_array_equal(tree.min(), positive_min(ref))
    np.testing.assert_array_equal(tree.leaves()[:, : ref.shape[1]], ref)
    mass = rng.random((tree.n_trees, 200)) * totals[:, None]
    slots, values = tree.find_prefix_sum(mass, return_values=True)
    for p in range(tree.n_trees):
        if totals[p] == 0:
            continue
        expected = np.searchsorted(np.cumsum(ref[p]), mass[p], side="right")
        np.testing.assert_array_equal(slots[p], expected)
        np.testing.assert_array_equal(values[p], ref[p, expected])


@pytest.mark.parametrize("n_trees, capacity, branching, max_top", LAYOUTS)
def test_random_updates_match_brute_force(n_trees: int, capacity: int, branching: int, max_top: int) -> None:
    rng = np.random.default_rng(capacity)
    tree = SumTree(n_trees, capacity, branching, max_top)
    assert tree.leaves_per_tree >= capacity
    ref = np.zeros((n_trees, capacity))
    np.testing.assert_array_equal(tree.total(), np.zeros(n_trees))
    np.testing.assert_array_equal(tree.min(), np.full(n_trees, np.inf))
    for step in range(12):
        kind = step % 3
        if kind == 0:  # scattered, with duplicates and zeros (integers: sums are exact)
            n = int(rng.integers(1, 3 * capacity + 2))
            t, s = rng.integers(0, n_trees, n), rng.integers(0, capacity, n)
            v = rng.integers(0, 50, n).astype(np.float64)
            tree.update(t, s, v)
            ref[t, s] = v  # numpy assignment: the last duplicate wins, as in the tree
        elif kind == 1:  # contiguous, small (deferred) or large (sliced)
            start = int(rng.integers(0, capacity))
            stop = int(rng.integers(start, capacity + 1)) if step % 2 else min(start + 4, capacity)
            v = rng.integers(1, 50, (n_trees, stop - start)).astype(np.float64)
            tree.update_range(start, stop, v)
            ref[:, start:stop] = v
        else:  # the leaves just sampled, through their cached ancestors
            if ref.sum(axis=1).min() == 0:
                continue
            leaf, _, path = tree.sample_leaves(rng.random((n_trees, 16)))
            v = rng.integers(0, 50, (n_trees, 16)).astype(np.float64)
            tree.update_flat(leaf, v, path)
            slot = leaf - np.arange(n_trees)[:, None] * tree.leaves_per_tree
            ref[np.arange(n_trees)[:, None].repeat(16, 1).ravel(), slot.ravel()] = v.ravel()
        check_against(tree, ref, rng)


def test_float_priorities_match_searchsorted() -> None:
    rng = np.random.default_rng(1)
    tree = SumTree(4, 30_000)
    ref = rng.random((4, 30_000)) ** 3 * rng.uniform(0.1, 10, (4, 1))
    tree.update(np.arange(4)[:, None], np.arange(30_000), ref)
    np.testing.assert_allclose(tree.total(), ref.sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(tree.min(), ref.min(axis=1))
    mass = rng.random((4, 5000)) * ref.sum(axis=1)[:, None]
    slots = tree.find_prefix_sum(mass)
    for p in range(4):
        np.testing.assert_array_equal(slots[p], np.searchsorted(np.cumsum(ref[p]), mass[p], side="right"))


def test_boundaries_and_overshoot_return_positive_leaves() -> None:
    tree = SumTree(2, 40, branching=4, max_top=4)
    ref = np.zeros((2, 40))
    ref[0, [3, 4, 20, 21]] = [1.0, 2.0, 0.0, 5.0]
    ref[1, [0, 39]] = [1.0, 1.0]
    tree.update(np.arange(2)[:, None], np.arange(40), ref)
    # A mass equal to a running sum belongs to the next positive leaf (side="right").
    np.testing.assert_array_equal(tree.find_prefix_sum(np.array([[0.0, 1.0, 3.0, 7.9], [0.0, 1.0, 1.5, 1.99]])),
                                  [[3, 4, 21, 21], [0, 39, 39, 39]])
    # Masses at or past the total (float error upstream) get the last positive leaf.
    over = tree.total()[:, None] * np.array([[1.0, 1.0 + 1e-12, 2.0]])
    np.testing.assert_array_equal(tree.find_prefix_sum(over), [[21, 21, 21], [39, 39, 39]])


def test_sampling_frequencies_follow_leaves() -> None:
    from scipy.stats import chisquare

    rng = np.random.default_rng(2)
    tree = SumTree(2, 300, branching=4, max_top=8)
    ref = rng.uniform(0.5, 3.0, (2, 300))
    ref[1, 250:] = 0.0  # a partly filled tree: never sample the empty tail
    tree.update(np.arange(2)[:, None], np.arange(300), ref)
    leaf, values, _ = tree.sample_leaves(rng.random((2, 200_000)))
    slots = leaf - np.arange(2)[:, None] * tree.leaves_per_tree
    np.testing.assert_array_equal(values, ref[np.arange(2)[:, None], slots])
    for p, n in ((0, 300), (1, 250)):
        counts = np.bincount(slots[p], minlength=300)
        assert counts[n:].sum() == 0
        expected = ref[p, :n] / ref[p, :n].sum() * slots.shape[1]
        assert chisquare(counts[:n], expected).pvalue > 1e-3


def test_state_dict_round_trip_is_bit_identical() -> None:
    rng = np.random.default_rng(3)
    tree = SumTree(3, 5000)
    tree.update(rng.integers(0, 3, 4000), rng.integers(0, 5000, 4000), rng.random(4000))
    tree.update_range(10, 14, rng.random((3, 4)))  # still pending when saved
    state = tree.state_dict()
    other = SumTree(3, 5000)
    other.load_state_dict(state)
    for name, value in other.state_dict().items():
        np.testing.assert_array_equal(value, state[name])
    mass = rng.random((3, 100)) * tree.total()[:, None]
    np.testing.assert_array_equal(other.find_prefix_sum(mass), tree.find_prefix_sum(mass))
    with pytest.raises(ValueError):
        SumTree(3, 4000).load_state_dict(state)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        SumTree(0, 10)
    tree = SumTree(1, 10)
    with pytest.raises(ValueError):
        tree.update(0, 3, -1.0)
    with pytest.raises(ValueError):
        tree.update_range(8, 12, 1.0)
