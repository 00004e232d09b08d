"""SUPER experience selection (SPEC §1.1) checked against references computed here.

Every windowed check keeps its own per-sender list of the valid |td| pushed so far and takes
the last ``window`` of them (the window is extended with the fragment before the threshold
is taken), so the ring buffer, the NaN padding and the different append counts per sender
are all exercised against plain numpy / scipy.
"""

import numpy as np
import pytest
from scipy.stats import norm

from relayrl.sharing.selectors import SELECTORS, make_selector
from td_fragments import INVALID_TD, fragments


# ----------------------------------------------------------------------------- helpers


class RefWindow:
    """Per-sender list of every valid |td| ever pushed, in order."""

    def __init__(self, n: int, size: int) -> None:
        self.hist: list[list[float]] = [[] for _ in range(n)]
        self.size = size

    def push(self, td: np.ndarray, valid: np.ndarray) -> None:
        for i in range(td.shape[0]):
            for m in range(td.shape[1]):
                if valid[i, m]:
                    self.hist[i].append(float(td[i, m]))

    def window(self, i: int) -> np.ndarray:
        return np.asarray(self.hist[i][-self.size :], dtype=float)


def assert_selection_matches(sel, td, valid, thr, tol=1e-9):
    """selection == valid & (td > thr), ignoring rows within ``tol`` of the threshold."""
    expected = valid & (td > thr[:, None])
    clear = np.abs(td - thr[:, None]) > tol * np.maximum(1.0, np.abs(thr[:, None]))
    assert sel.dtype == bool
    assert not (sel & ~valid).any(), "invalid transition selected"
    np.testing.assert_array_equal(sel[clear], expected[clear])


# ----------------------------------------------------------------------------- factory


def test_factory_modes_and_errors():
    assert set(SELECTORS) == {"quantile", "gaussian", "stochastic", "uniform", "all", "none"}
    for mode in SELECTORS:
        s = make_selector(mode, 3, bandwidth=0.2, window=10)
        out = s.select(np.ones((3, 4)), np.ones((3, 4), bool))
        assert out.shape == (3, 4) and out.dtype == bool
    with pytest.raises(ValueError, match="unknown selection mode"):
        make_selector("topk", 2, bandwidth=0.1, window=10)
    with pytest.raises(ValueError, match="scale"):
        make_selector("gaussian", 2, bandwidth=0.1, window=10, gaussian_scale="mad")
    with pytest.raises(ValueError, match="normaliser"):
        make_selector("stochastic", 2, bandwidth=0.1, window=10, stochastic_normaliser="global")


# ----------------------------------------------------------------------------- 1. quantile


@pytest.mark.parametrize("bandwidth", [0.1, 0.37, 0.8])
@pytest.mark.parametrize("window,m", [(12, 5), (10, 25)])  # (10, 25): a fragment wraps the ring by itself
def test_quantile_threshold_matches_percentile_of_window(bandwidth, window, m):
    rng = np.random.default_rng(1)
    n = 4
    valid_p = [1.0, 0.6, 0.3, 0.9]  # senders append different counts per fragment
    frags = fragments(rng, n, m, 30, valid_p)
    frags[0][1][:] = True  # every sender has a non-empty window from the start
    frags[0] = (np.where(frags[0][1], rng.exponential(size=(n, m)), INVALID_TD), frags[0][1])
    sel = make_selector("quantile", n, bandwidth=bandwidth, window=window)
    ref = RefWindow(n, window)
    total_pushed = np.zeros(n, int)
    for td, valid in frags:
        out = sel.select(td, valid)
        ref.push(td, valid)
        total_pushed += valid.sum(axis=1)
        thr = np.array([np.percentile(ref.window(i), 100.0 * (1.0 - bandwidth)) for i in range(n)])
        np.testing.assert_allclose(sel.threshold(), thr, rtol=1e-12, atol=0)
        assert_selection_matches(out, td, valid, thr)
    assert (total_pushed > 2 * window).all(), "test must wrap every sender's window"


def test_quantile_sender_without_any_valid_transition_selects_nothing():
    sel = make_selector("quantile", 2, bandwidth=0.5, window=8)
    td = np.array([[0.1, 0.9, 0.5], [INVALID_TD] * 3])
    valid = np.array([[True, True, True], [False, False, False]])
    with pytest.warns(RuntimeWarning):  # nanquantile over an all-NaN row
        out = sel.select(td, valid)
    np.testing.assert_array_equal(out, [[False, True, False], [False, False, False]])


def test_quantile_bandwidth_zero_selects_nothing():
    rng = np.random.default_rng(2)
    sel = make_selector("quantile", 3, bandwidth=0.0, window=50)
    for _ in range(5):
        td = rng.exponential(size=(3, 20))
        assert not sel.select(td, np.ones_like(td, bool)).any()


# ----------------------------------------------------------------------------- 2. gaussian


@pytest.mark.parametrize("scale", ["std", "variance"])
@pytest.mark.parametrize("bandwidth", [0.05, 0.3, 0.7])
def test_gaussian_threshold_matches_numpy_moments_of_window(scale, bandwidth):
    rng = np.random.default_rng(3)
    n, m, window = 3, 9, 20
    frags = fragments(rng, n, m, 15, [1.0, 0.5, 0.8], dist="lognormal")
    frags[0][1][:] = True
    frags[0] = (rng.lognormal(0.0, 1.5, size=(n, m)), frags[0][1])
    c = norm.isf(bandwidth)
    sel = make_selector("gaussian", n, bandwidth=bandwidth, window=window, gaussian_scale=scale)
    ref = RefWindow(n, window)
    for td, valid in frags:
        out = sel.select(td, valid)
        ref.push(td, valid)
        mu = np.array([ref.window(i).mean() for i in range(n)])
        sd = np.array([ref.window(i).std(ddof=0) for i in range(n)])
        thr = mu + c * (sd if scale == "std" else sd**2)
        np.testing.assert_allclose(sel.threshold(), thr, rtol=1e-10, atol=1e-12)
        assert_selection_matches(out, td, valid, thr)


def running_reference(blocks: list[np.ndarray], span: int) -> tuple[float, float]:
    """Moments of the weighted empirical distribution the block-fold defines: a fragment of
    k > 0 values enters with weight lam = 1 - (1 - d)^k (1 for the first), spread evenly over
    its values, and every later fragment of k' values discounts it by (1 - d)^k'."""
    d = 2.0 / (span + 1.0)
    blocks = [b for b in blocks if len(b)]
    lams = [1.0] + [1.0 - (1.0 - d) ** len(b) for b in blocks[1:]]
    values, weights = [], []
    for t, b in enumerate(blocks):
        w = lams[t] * np.prod([1.0 - lam for lam in lams[t + 1 :]])
        values.append(b)
        weights.append(np.full(len(b), w / len(b)))
    v, w = np.concatenate(values), np.concatenate(weights)
    assert np.isclose(w.sum(), 1.0)
    mean = float((w * v).sum())
    return mean, float((w * (v - mean) ** 2).sum())


@pytest.mark.parametrize("scale", ["std", "variance"])
def test_gaussian_running_matches_weighted_block_reference(scale):
    rng = np.random.default_rng(4)
    n, m, span, b = 3, 6, 10, 0.2
    c = norm.isf(b)
    # sender 2 has an empty first fragment: its first non-empty one must initialise the moments
    frags = fragments(rng, n, m, 12, [1.0, 0.5, 0.7])
    frags[0][1][2] = False
    sel = make_selector("gaussian", n, bandwidth=b, window=span, gaussian_scale=scale, running_moments=True)
    blocks: list[list[np.ndarray]] = [[] for _ in range(n)]
    for td, valid in frags:
        out = sel.select(td, valid)
        for i in range(n):
            blocks[i].append(td[i][valid[i]])
        seen = np.array([sum(len(x) for x in blocks[i]) > 0 for i in range(n)])
        thr = np.zeros(n)
        for i in np.flatnonzero(seen):
            mu, var = running_reference(blocks[i], span)
            thr[i] = mu + c * (np.sqrt(var) if scale == "std" else var)
        np.testing.assert_allclose(sel.threshold()[seen], thr[seen], rtol=1e-9, atol=1e-12)
        assert not out[~seen].any()
        assert_selection_matches(out[seen], td[seen], valid[seen], thr[seen])


def test_gaussian_running_one_value_fragments_equal_classic_ewm():
    """With k = 1 per fragment the fold is the classic incremental EW mean / variance
    (alpha = 2 / (span + 1)), seeded with the first value."""
    rng = np.random.default_rng(5)
    span, d = 7, 2.0 / 8.0
    xs = rng.exponential(size=40)
    sel = make_selector("gaussian", 1, bandwidth=0.3, window=span, running_moments=True)
    mean, var = xs[0], 0.0
    sel.select(xs[:1].reshape(1, 1), np.ones((1, 1), bool))
    for x in xs[1:]:
        sel.select(np.array([[x]]), np.ones((1, 1), bool))
        diff = x - mean
        mean = mean + d * diff
        var = (1.0 - d) * (var + d * diff * diff)
    state = sel.state_dict()
    np.testing.assert_allclose(state["mean"], [mean], rtol=1e-12)
    np.testing.assert_allclose(state["var"], [var], rtol=1e-12)


@pytest.mark.parametrize("scale", ["std", "variance"])
def test_gaussian_running_tracks_stationary_distribution_with_constant_memory(scale):
    rng = np.random.default_rng(6)
    n, m, span, b, beta = 4, 64, 1500, 0.1, 2.0  # Exponential(beta): mean = sd = beta
    c = norm.isf(b)
    sel = make_selector("gaussian", n, bandwidth=b, window=span, gaussian_scale=scale, running_moments=True)
    assert getattr(sel, "window", None) is None
    sizes = {k: np.shape(v) for k, v in sel.state_dict().items()}
    for _ in range(300):  # 19 200 values per sender, >> span
        td = rng.exponential(beta, size=(n, m))
        sel.select(td, np.ones_like(td, bool))
    assert {k: np.shape(v) for k, v in sel.state_dict().items()} == sizes == {"bandwidth": (), "mean": (n,), "var": (n,), "seen": (n,)}
    expected = beta + c * (beta if scale == "std" else beta**2)
    np.testing.assert_allclose(sel.threshold(), expected, rtol=0.08)


@pytest.mark.parametrize("running", [False, True])
def test_gaussian_realised_bandwidth_on_normal_td(running):
    """On (practically positive) normal |td| the rule's realised bandwidth is b."""
    rng = np.random.default_rng(7)
    n, m, b = 4, 100, 0.1
    sel = make_selector("gaussian", n, bandwidth=b, window=1500, running_moments=running)
    sent = offered = 0
    for t in range(120):
        td = np.abs(rng.normal(10.0, 1.0, size=(n, m)))
        valid = np.ones_like(td, bool)
        out = sel.select(td, valid)
        if t >= 20:
            sent += out.sum()
            offered += valid.sum()
    assert abs(sent / offered - b) < 0.015


# ----------------------------------------------------------------------------- 3. stochastic


def stochastic_reference(td, valid, b, alpha):
    n_valid = valid.sum(axis=1)
    p = np.zeros_like(td, dtype=float)
    for i in range(td.shape[0]):
        v = np.abs(td[i][valid[i]]) ** alpha
        if v.sum() > 0:
            p[i][valid[i]] = np.minimum(1.0, b * n_valid[i] * v / v.sum())
    return p


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("b", [0.05, 0.3, 1.0])
def test_stochastic_fragment_probabilities_match_formula(alpha, b):
    rng = np.random.default_rng(8)
    td, valid = fragments(rng, 3, 30, 1, [1.0, 0.5, 0.2], dist="lognormal")[0]
    sel = make_selector("stochastic", 3, bandwidth=b, window=100, stochastic_alpha=alpha)
    p = sel.probabilities(td, valid)
    np.testing.assert_allclose(p, stochastic_reference(td, valid, b, alpha), rtol=1e-12, atol=0)
    assert (p[~valid] == 0).all()


def test_stochastic_all_zero_td_selects_nothing():
    sel = make_selector("stochastic", 2, bandwidth=0.5, window=10)
    td = np.zeros((2, 5))
    assert not sel.probabilities(td, np.ones_like(td, bool)).any()
    assert not sel.select(td, np.ones_like(td, bool)).any()


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_stochastic_window_normaliser_probabilities(alpha):
    rng = np.random.default_rng(9)
    n, m, window, b = 3, 7, 16, 0.25
    sel = make_selector("stochastic", n, bandwidth=b, window=window, stochastic_alpha=alpha, stochastic_normaliser="window")
    ref = RefWindow(n, window)
    for td, valid in fragments(rng, n, m, 10, [1.0, 0.6, 0.3]):
        p = sel.probabilities(td, valid)  # extends the window first
        ref.push(td, valid)
        exp = np.zeros_like(td)
        for i in range(n):
            w = ref.window(i)
            if len(w):
                exp[i] = np.where(valid[i], np.minimum(1.0, b * len(w) * td[i] ** alpha / (w**alpha).sum()), 0.0)
        np.testing.assert_allclose(p, exp, rtol=1e-12, atol=0)


def _empirical_counts(sel, td, valid, reps):
    return np.array([sel.select(td, valid).sum(axis=1) for _ in range(reps)])  # [reps, N]


def test_stochastic_expected_count_matches_empirical_mean():
    rng = np.random.default_rng(10)
    td, valid = fragments(rng, 3, 40, 1, [1.0, 0.7, 0.4], dist="lognormal")[0]
    b, reps = 0.2, 4000
    sel = make_selector("stochastic", 3, bandwidth=b, window=100, seed=123)
    p = stochastic_reference(td, valid, b, 1.0)
    assert (p == 1.0).any(), "fixture should clip some probabilities"
    counts = _empirical_counts(sel, td, valid, reps)
    expected = p.sum(axis=1)
    se = np.sqrt((p * (1 - p)).sum(axis=1) / reps)
    assert (np.abs(counts.mean(axis=0) - expected) < 5 * se + 1e-12).all(), (counts.mean(axis=0), expected, se)
    # never more than the valid rows, and invalid rows are never picked
    assert (counts <= valid.sum(axis=1)).all()


def test_stochastic_clipping_lowers_realised_bandwidth_and_b1_is_not_share_all():
    n_rows = 20
    td = np.ones((1, n_rows))
    td[0, 0] = 100.0  # skewed: one huge |td|
    valid = np.ones_like(td, bool)
    for b in (0.5, 1.0):
        sel = make_selector("stochastic", 1, bandwidth=b, window=100, seed=7)
        p = sel.probabilities(td, valid)
        expected_p = np.minimum(1.0, b * n_rows * td / td.sum())
        np.testing.assert_allclose(p, expected_p, rtol=1e-12)
        assert p[0, 0] == 1.0 and (p[0, 1:] < 1.0).all()
        expected = p.sum()
        assert expected < b * n_rows - 1.0  # clipping lost mass
        counts = _empirical_counts(sel, td, valid, 2000)[:, 0]
        realised = counts.mean() / n_rows
        assert realised < b - 0.2, realised
        assert abs(counts.mean() - expected) < 5 * np.sqrt((p * (1 - p)).sum() / 2000)
        assert (counts < n_rows).all(), "b = 1 must not share everything for skewed td"


def test_stochastic_without_clipping_realised_bandwidth_is_b():
    rng = np.random.default_rng(11)
    td = rng.uniform(0.5, 1.5, size=(2, 50))
    valid = np.ones_like(td, bool)
    b = 0.2
    sel = make_selector("stochastic", 2, bandwidth=b, window=100, seed=3)
    p = sel.probabilities(td, valid)
    assert (p < 1).all()
    np.testing.assert_allclose(p.sum(axis=1), b * 50, rtol=1e-12)
    counts = _empirical_counts(sel, td, valid, 2000)
    np.testing.assert_allclose(counts.mean(axis=0) / 50, b, atol=0.01)


@pytest.mark.parametrize("normaliser", ["fragment", "window"])
def test_stochastic_alpha_zero_ignores_invalid_rows_and_empty_slots(normaliser):
    # alpha = 0: every valid transition has |td|^0 = 1, so p_i = min(1, b * n * 1 / n) = b
    td = np.array([[0.1, 0.5, 2.0, 0.3]])
    valid = np.array([[True, True, False, False]])
    sel = make_selector("stochastic", 1, bandwidth=0.5, window=10, stochastic_alpha=0.0, stochastic_normaliser=normaliser)
    np.testing.assert_allclose(sel.probabilities(td, valid), [[0.5, 0.5, 0.0, 0.0]])


# ----------------------------------------------------------------------------- uniform / all / none


def test_uniform_all_none():
    rng = np.random.default_rng(12)
    td = rng.exponential(size=(4, 500))
    valid = rng.random((4, 500)) < 0.7
    sel = make_selector("uniform", 4, bandwidth=0.3, window=10, seed=5)
    hits = sent = 0
    for _ in range(20):
        out = sel.select(td, valid)
        assert not (out & ~valid).any()
        hits += out.sum()
        sent += valid.sum()
    assert abs(hits / sent - 0.3) < 0.01
    np.testing.assert_array_equal(make_selector("all", 4, bandwidth=0.3, window=10).select(td, valid), valid)
    assert not make_selector("none", 4, bandwidth=0.3, window=10).select(td, valid).any()
    assert not make_selector("uniform", 4, bandwidth=0.0, window=10).select(td, valid).any()
