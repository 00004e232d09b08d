"""ReplayBuffer: ring semantics per buffer, masked/broadcast adds, PER statistics, checkpoints."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy.stats import chisquare

from relayrl.replay import FieldSpec, ReplayBuffer

FIELDS = {
    "obs": FieldSpec((7, 7, 3), np.uint8),
    "action": FieldSpec((), np.uint8),
    "reward": FieldSpec((), np.float32),
}
ALPHA, BETA, EPS = 0.6, 0.4, 1e-6


def rows(ids: np.ndarray) -> dict[str, np.ndarray]:
    """Transitions whose every field encodes its id (ids < 256), in any leading shape."""
    ids = np.asarray(ids)
    return {
        "obs": np.broadcast_to(ids[..., None, None, None], ids.shape + (7, 7, 3)).astype(np.uint8),
        "action": ids.astype(np.uint8),
        "reward": ids.astype(np.float32),
    }


class RefRing:
    """One plain-Python ring buffer per agent: the behaviour the vectorised buffer must match."""

    def __init__(self, n_buffers: int, capacity: int) -> None:
        self.slots = [[None] * capacity for _ in range(n_buffers)]
        self.ptr = [0] * n_buffers
        self.size = [0] * n_buffers

    def add(self, p: int, item: int) -> None:
        cap = len(self.slots[p])
        self.slots[p][self.ptr[p]] = item
        self.ptr[p] = (self.ptr[p] + 1) % cap
        self.size[p] = min(self.size[p] + 1, cap)


def assert_matches(buf: ReplayBuffer, ref: RefRing) -> None:
    np.testing.assert_array_equal(buf.size, ref.size)
    stored = buf.storage()
    for p, slots in enumerate(ref.slots):
        n = ref.size[p]
        np.testing.assert_array_equal(stored["action"][p, :n], slots[:n])
        np.testing.assert_array_equal(stored["reward"][p, :n], slots[:n])
        np.testing.assert_array_equal(stored["obs"][p, :n, 3, 2, 1], slots[:n])


@pytest.mark.parametrize("prioritized", [False, True])
def test_wrap_around_with_per_buffer_masks(prioritized: bool) -> None:
    rng = np.random.default_rng(0)
    n_buffers, capacity = 3, 7
    buf = ReplayBuffer(n_buffers, capacity, FIELDS, prioritized=prioritized, seed=0)
    ref = RefRing(n_buffers, capacity)
    next_id = 0
    for step in range(25):
        m = int(rng.integers(0, 12))  # sometimes more rows than capacity in one call
        ids = (next_id + np.arange(n_buffers * m).reshape(n_buffers, m)) % 256
        next_id += n_buffers * m
        mask = None if step % 4 == 0 else rng.random((n_buffers, m)) < [[0.9], [0.5], [0.2]]
        buf.add(rows(ids), mask=mask)
        for p in range(n_buffers):
            for j in range(m):
                if mask is None or mask[p, j]:
                    ref.add(p, int(ids[p, j]))
        assert_matches(buf, ref)
        if prioritized:
            # Filled slots carry a priority, empty ones none, so they can never be sampled.
            filled = np.arange(capacity) < np.array(ref.size)[:, None]
            assert np.all((buf.priorities() > 0) == filled)
    # Different fill levels: samples only ever come from filled slots.
    fresh = ReplayBuffer(n_buffers, capacity, FIELDS, prioritized=prioritized, seed=1)
    fresh.add(rows(np.arange(5)), mask=np.array([[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [1] * 5], bool))
    np.testing.assert_array_equal(fresh.size, [1, 3, 5])
    batch = fresh.sample(500)
    assert np.all(batch.indices < fresh.size[:, None])
    assert set(np.unique(batch.indices[1])) == {0, 1, 2}


@pytest.mark.parametrize("prioritized", [False, True])
def test_wrap_around_without_masks(prioritized: bool) -> None:
    # Shared pointers take the sliced path: split writes at the end of the ring, and calls
    # with more rows than capacity keep only the newest.
    buf = ReplayBuffer(2, 7, FIELDS, prioritized=prioritized, seed=0)
    ref = RefRing(2, 7)
    next_id = 0
    for m in (3, 3, 4, 1, 9, 5, 6, 7, 2, 15, 0, 4):
        ids = (next_id + np.arange(2 * m).reshape(2, m)) % 256
        next_id += 2 * m
        buf.add(rows(ids) if m % 2 else rows(ids[0]))  # per-buffer rows, or shared rows
        for p in range(2):
            for j in range(m):
                ref.add(p, int(ids[p if m % 2 else 0, j]))
        assert_matches(buf, ref)
        if prioritized and ref.size[0]:
            assert np.all(buf.priorities()[:, : ref.size[0]] > 0)


def test_broadcast_rows_with_mask_store_exactly_the_masked_rows() -> None:
    buf = ReplayBuffer(3, 10, FIELDS, prioritized=True, seed=0)
    mask = np.array([[1, 0, 1, 0, 1, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    buf.add(rows(np.arange(10, 16)), mask=mask)  # the same 6 rows offered to every buffer
    np.testing.assert_array_equal(buf.size, [3, 0, 6])
    stored = buf.storage()
    np.testing.assert_array_equal(stored["action"][0, :3], [10, 12, 14])
    np.testing.assert_array_equal(stored["action"][2, :6], np.arange(10, 16))
    buf.add(rows(np.arange(20, 23)))  # broadcast, no mask: appended after each buffer's rows
    np.testing.assert_array_equal(buf.size, [6, 3, 9])
    np.testing.assert_array_equal(stored["action"][0, :6], [10, 12, 14, 20, 21, 22])
    np.testing.assert_array_equal(stored["action"][1, :3], [20, 21, 22])
    np.testing.assert_array_equal(stored["action"][2, 6:9], [20, 21, 22])
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(3, 10, FIELDS).sample(4)
    empty_one = ReplayBuffer(2, 10, FIELDS)
    empty_one.add(rows(np.arange(2)), mask=np.array([[1, 1], [0, 0]], bool))
    with pytest.raises(ValueError, match="empty"):
        empty_one.sample(4)


def test_dtypes_and_shapes_are_preserved() -> None:
    for prioritized in (False, True):
        buf = ReplayBuffer(2, 16, FIELDS, prioritized=prioritized, seed=0)
        buf.add(rows(np.arange(20).reshape(2, 10)))
        batch = buf.sample(5)
        assert batch.data["obs"].dtype == np.uint8 and batch.data["obs"].shape == (2, 5, 7, 7, 3)
        assert batch.data["action"].dtype == np.uint8 and batch.data["action"].shape == (2, 5)
        assert batch.data["reward"].dtype == np.float32
        assert batch.indices.dtype == np.int64 and batch.indices.shape == (2, 5)
        assert batch.weights.dtype == np.float32 and batch.weights.shape == (2, 5)
        # Each sampled row is the transition stored at its index, in its buffer.
        expected = np.arange(20).reshape(2, 10)[np.arange(2)[:, None], batch.indices]
        np.testing.assert_array_equal(batch.data["action"], expected)
        np.testing.assert_array_equal(batch.data["obs"][:, :, 6, 6, 2], expected)
    with pytest.raises(ValueError):
        ReplayBuffer(1, 4, FIELDS).add({"obs": np.zeros((2, 7, 7)), "action": np.zeros(2), "reward": np.zeros(2)})
    with pytest.raises(ValueError):
        ReplayBuffer(1, 4, FIELDS).add({"obs": np.zeros((2, 7, 7, 3))})


def filled_per_buffer(raw: np.ndarray, seed: int = 0) -> ReplayBuffer:
    """A full PER buffer per row of ``raw`` [P, capacity], with those raw priorities."""
    n_buffers, capacity = raw.shape
    buf = ReplayBuffer(n_buffers, capacity, FIELDS, prioritized=True, alpha=ALPHA, beta=BETA, eps=EPS, seed=seed)
    buf.add(rows(np.arange(n_buffers * capacity).reshape(n_buffers, capacity) % 256))
    buf.update_priorities(np.broadcast_to(np.arange(capacity), raw.shape), raw)
    return buf


@pytest.mark.parametrize("capacity", [40, 3000])  # 3000 slots use a tree with internal levels
def test_prioritized_frequencies_follow_p_alpha(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    raw = rng.uniform(0, 2, (3, capacity)) * np.array([[1.0], [10.0], [0.1]])
    raw[0, :5] = 0.0  # priority 0 still samples, at eps ** alpha
    buf = filled_per_buffer(raw)
    n_draws = 100 * capacity if capacity > 100 else 40_000
    counts = np.zeros((3, capacity), dtype=np.int64)
    for _ in range(n_draws // 4000):
        idx = buf.sample(4000).indices
        for p in range(3):
            counts[p] += np.bincount(idx[p], minlength=capacity)
    for p in range(3):
        probs = (raw[p] + EPS) ** ALPHA / ((raw[p] + EPS) ** ALPHA).sum()
        observed = counts[p]
        if capacity <= 100:
            assert chisquare(observed, probs * observed.sum()).pvalue > 1e-3
        else:  # pool the rare cells so that every expected count is large enough
            order = np.argsort(probs)
            bins = np.array_split(order, 200)
            obs = np.array([observed[b].sum() for b in bins])
            exp = np.array([probs[b].sum() for b in bins]) * observed.sum()
            assert chisquare(obs, exp).pvalue > 1e-3


def test_importance_weights_match_the_formula() -> None:
    rng = np.random.default_rng(5)
    raw = rng.uniform(0, 3, (2, 50))
    buf = ReplayBuffer(2, 80, FIELDS, prioritized=True, alpha=ALPHA, beta=BETA, eps=EPS, seed=0)
    buf.add(rows(np.arange(100).reshape(2, 50)))  # 50 of 80 slots filled
    buf.update_priorities(np.broadcast_to(np.arange(50), (2, 50)), raw)
    batch = buf.sample(64)
    for p in range(2):
        stored = (raw[p] + EPS) ** ALPHA
        prob = stored / stored.sum()
        size = 50
        w_all = (size * prob) ** -BETA
        expected = (size * prob[batch.indices[p]]) ** -BETA / w_all.max()
        np.testing.assert_allclose(batch.weights[p], expected, rtol=1e-5)
    assert batch.weights.max() <= 1.0 + 1e-6
    uniform = ReplayBuffer(2, 80, FIELDS, seed=0)
    uniform.add(rows(np.arange(10).reshape(2, 5)))
    np.testing.assert_array_equal(uniform.sample(7).weights, np.ones((2, 7), np.float32))


def test_priority_updates_change_sampling_and_max_priority() -> None:
    buf = ReplayBuffer(2, 100, FIELDS, prioritized=True, alpha=ALPHA, beta=BETA, eps=EPS, seed=0)
    np.testing.assert_array_equal(buf.max_priority(), [1.0, 1.0])
    buf.add(rows(np.arange(20).reshape(2, 10)))
    # Fresh rows enter at the max priority (1.0 before any update).
    np.testing.assert_allclose(buf.priorities()[:, :10], (1.0 + EPS) ** ALPHA)
    before = np.bincount(buf.sample(2000).indices[0], minlength=10)
    assert before.min() > 100  # roughly uniform
    new = np.full((2, 10), 0.01)
    new[0, 3] = 50.0
    new[1, 7] = 4.0
    buf.update_priorities(np.broadcast_to(np.arange(10), (2, 10)).copy(), new)
    np.testing.assert_allclose(buf.max_priority(), [50.0, 4.0])
    after = np.bincount(buf.sample(2000).indices[0], minlength=10)
    assert after[3] > 1800  # expected share 50^0.6 / (50^0.6 + 9 * 0.01^0.6) = 0.95
    # New rows get the current max; lowering priorities does not lower the max.
    buf.update_priorities(np.array([[3], [7]]), np.array([[0.5], [0.5]]))
    np.testing.assert_allclose(buf.max_priority(), [50.0, 4.0])
    buf.add(rows(np.arange(2)))  # same pointer everywhere: the sliced insert path
    np.testing.assert_allclose(buf.priorities()[0, 10:12], (50.0 + EPS) ** ALPHA)
    np.testing.assert_allclose(buf.priorities()[1, 10:12], (4.0 + EPS) ** ALPHA)
    buf.add(rows(np.arange(2)), mask=np.array([[True, False], [True, True]]))  # scattered path
    np.testing.assert_allclose(buf.priorities()[0, 12], (50.0 + EPS) ** ALPHA)
    np.testing.assert_allclose(buf.priorities()[1, 12:14], (4.0 + EPS) ** ALPHA)
    np.testing.assert_array_equal(buf.priorities()[0, 13], 0.0)
    # Explicit insert priorities are stored as (p + eps) ** alpha and also raise the max.
    buf.add(rows(np.arange(1)), priorities=np.array([[70.0], [2.0]]))
    np.testing.assert_allclose(buf.priorities()[0, 13], (70.0 + EPS) ** ALPHA)
    np.testing.assert_allclose(buf.priorities()[1, 14], (2.0 + EPS) ** ALPHA)
    np.testing.assert_allclose(buf.max_priority(), [70.0, 4.0])
    sliced = ReplayBuffer(2, 100, FIELDS, prioritized=True, alpha=ALPHA, beta=BETA, eps=EPS, seed=0)
    sliced.add(rows(np.arange(2)), priorities=np.array([[1.0, 0.0], [9.0, 3.0]]))
    np.testing.assert_allclose(sliced.priorities()[:, :2], (np.array([[1.0, 0.0], [9.0, 3.0]]) + EPS) ** ALPHA)
    np.testing.assert_allclose(sliced.max_priority(), [1.0, 9.0])


def test_sampled_indices_fast_path_equals_general_path() -> None:
    rng = np.random.default_rng(7)
    raw = rng.uniform(0, 2, (2, 300))
    a, b = filled_per_buffer(raw, seed=3), filled_per_buffer(raw, seed=3)
    for _ in range(20):
        ba, bb = a.sample(32), b.sample(32)
        np.testing.assert_array_equal(ba.indices, bb.indices)
        with pytest.raises(ValueError):
            ba.indices[0, 0] = 1  # read-only: they address cached tree paths
        new = rng.uniform(0, 3, (2, 32))
        a.update_priorities(ba.indices, new)  # cached rows and ancestors
        b.update_priorities(bb.indices.copy(), new)  # validated, recomputed
        np.testing.assert_array_equal(a.priorities(), b.priorities())
    # Duplicates: the last write wins.
    a.update_priorities(np.array([[5, 5], [6, 6]]), np.array([[1.0, 2.0], [3.0, 0.0]]))
    np.testing.assert_allclose(a.priorities()[:, [5, 6]].diagonal(), [(2.0 + EPS) ** ALPHA, (0.0 + EPS) ** ALPHA])


def test_invalid_priority_updates_raise() -> None:
    buf = ReplayBuffer(2, 10, FIELDS, prioritized=True, seed=0)
    buf.add(rows(np.arange(6).reshape(2, 3)))
    for indices, priorities in (
        (np.array([[0], [3]]), np.ones((2, 1))),  # slot 3 is not filled
        (np.array([[-1], [0]]), np.ones((2, 1))),
        (np.array([[0], [1]]), np.array([[-0.5], [1.0]])),
        (np.array([[0], [1]]), np.array([[np.nan], [1.0]])),
        (np.array([0, 1]), np.ones(2)),
    ):
        with pytest.raises(ValueError):
            buf.update_priorities(indices, priorities)
    with pytest.raises(ValueError):
        ReplayBuffer(2, 10, FIELDS).update_priorities(np.zeros((2, 1), np.int64), np.ones((2, 1)))


@pytest.mark.parametrize("prioritized", [False, True])
def test_state_dict_round_trip_gives_identical_samples(prioritized: bool) -> None:
    rng = np.random.default_rng(11)

    def run(buf: ReplayBuffer, steps: int) -> list:
        out = []
        for i in range(steps):
            buf.add(rows((np.arange(8).reshape(2, 4) + i) % 256))
            batch = buf.sample(16)
            if prioritized:
                buf.update_priorities(batch.indices, np.abs(np.sin(batch.indices + i)))
            out.append((batch.indices.copy(), batch.weights.copy(), batch.data["action"].copy()))
        return out

    buf = ReplayBuffer(2, 50, FIELDS, prioritized=prioritized, seed=4)
    buf.add(rows(rng.integers(0, 256, (2, 30))), mask=rng.random((2, 30)) < 0.7)
    run(buf, 10)
    state = pickle.loads(pickle.dumps(buf.state_dict()))  # what a checkpoint does, at once
    expected = run(buf, 40)
    restored = ReplayBuffer(2, 50, FIELDS, prioritized=prioritized, seed=999)
    restored.load_state_dict(state)
    for (ia, wa, da), (ib, wb, db) in zip(expected, run(restored, 40)):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(wa, wb)
        np.testing.assert_array_equal(da, db)
    np.testing.assert_array_equal(restored.size, buf.size)
    np.testing.assert_array_equal(restored.max_priority(), buf.max_priority())
    with pytest.raises(ValueError):
        ReplayBuffer(2, 60, FIELDS, prioritized=prioritized).load_state_dict(state)


def test_state_dict_holds_only_the_filled_rows_without_copying_them() -> None:
    buf = ReplayBuffer(3, 40, FIELDS, prioritized=True, seed=1)
    buf.add(rows(np.arange(3 * 25).reshape(3, 25) % 256))
    buf.add(rows(np.arange(3 * 5).reshape(3, 5) % 256), mask=np.array([[True] * 5, [False] * 5, [True, False] * 2 + [True]]))
    state = buf.state_dict()
    assert [len(r) for r in state["data"]["obs"]] == [30, 25, 28]
    assert all(np.shares_memory(rows_i, buf.storage()["obs"]) for rows_i in state["data"]["obs"])
    restored = ReplayBuffer(3, 40, FIELDS, prioritized=True, seed=2)
    restored.add(rows(np.full((3, 40), 7)))  # rows beyond the saved ones are cleared on load
    restored.load_state_dict(pickle.loads(pickle.dumps(state)))
    for name in FIELDS:
        np.testing.assert_array_equal(restored.storage()[name], buf.storage()[name])
