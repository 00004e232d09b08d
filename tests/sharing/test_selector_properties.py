"""What every SUPER selection rule holds whatever its formula (SPEC §1.1): a bandwidth of 1
or more shares every valid step, degenerate windows share nothing, the realised bandwidth
meets the target, invalid rows leave no trace, the state round-trips (bandwidth included),
and a user's rule is checked before it relays. The formulas themselves: ``test_selectors.py``.
"""

import copy

import numpy as np
import pytest

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_config, build_run
from relayrl.sharing.selectors import SELECTORS, SelectionRule, make_selector
from td_fragments import fragments

# ----------------------------------------------------------------------------- bandwidth >= 1


GAUSSIAN_VARIANTS = [
    {"gaussian_scale": "std"},
    {"gaussian_scale": "variance"},
    {"gaussian_scale": "std", "running_moments": True},
    {"gaussian_scale": "variance", "running_moments": True},
]
WINDOWED = [("quantile", {})] + [("gaussian", kw) for kw in GAUSSIAN_VARIANTS]


@pytest.mark.parametrize("bandwidth", [1.0, 1.5])
@pytest.mark.parametrize("mode,kwargs", WINDOWED)
def test_full_bandwidth_selects_exactly_all_valid(mode, kwargs, bandwidth):
    rng = np.random.default_rng(13)
    sel = make_selector(mode, 3, bandwidth=bandwidth, window=30, **kwargs)
    for td, valid in fragments(rng, 3, 12, 6, [1.0, 0.5, 0.1]):
        td = np.where(valid, td, 0.0)
        td[0, :3] = 0.0  # ties / zeros are still shared
        np.testing.assert_array_equal(sel.select(td, valid), valid)


# ----------------------------------------------------------------------------- degenerate windows


@pytest.mark.parametrize("bandwidth", [0.05, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("mode,kwargs", WINDOWED)
def test_all_zero_td_shares_nothing(mode, kwargs, bandwidth):
    sel = make_selector(mode, 2, bandwidth=bandwidth, window=40, **kwargs)
    for _ in range(6):
        td = np.zeros((2, 25))
        assert not sel.select(td, np.ones_like(td, bool)).any()


@pytest.mark.parametrize("value", [0.1, 0.3, 1 / 3, 2.2])
@pytest.mark.parametrize("bandwidth", [0.1, 0.5, 0.9])
def test_quantile_all_equal_nonzero_td_shares_nothing(value, bandwidth):
    sel = make_selector("quantile", 1, bandwidth=bandwidth, window=1500)
    for _ in range(40):
        td = np.full((1, 50), value)
        assert not sel.select(td, np.ones_like(td, bool)).any()


@pytest.mark.parametrize(
    "value,bandwidth,kwargs",
    [
        (0.3, 0.9, {"gaussian_scale": "std"}),
        (0.3, 0.1, {"gaussian_scale": "variance"}),
        (0.1, 0.9, {"gaussian_scale": "std", "running_moments": True}),
    ],
)
def test_gaussian_all_equal_nonzero_td_does_not_share_everything(value, bandwidth, kwargs):
    sel = make_selector("gaussian", 1, bandwidth=bandwidth, window=1500, **kwargs)
    shared_all = []
    for t in range(40):
        td = np.full((1, 50), value)
        if sel.select(td, np.ones_like(td, bool)).all():
            shared_all.append(t)
    assert shared_all == [], f"fragments shared in full: {shared_all}"


@pytest.mark.parametrize("running", [False, True])
def test_gaussian_bandwidth_zero_selects_nothing(running):
    td = np.array([[0.1, 0.5, 2.0, 0.3]])
    sel = make_selector("gaussian", 1, bandwidth=0.0, window=10, running_moments=running)
    assert not sel.select(td, np.ones_like(td, bool)).any()


# ----------------------------------------------------------------------------- realised bandwidth


@pytest.mark.parametrize("dist", ["exponential", "lognormal"])
def test_quantile_realised_bandwidth_close_to_target(dist):
    rng = np.random.default_rng(14)
    n, m, b = 4, 100, 0.1
    sel = make_selector("quantile", n, bandwidth=b, window=1500)
    sent = np.zeros(n)
    offered = np.zeros(n)
    for td, valid in fragments(rng, n, m, 150, [1.0, 0.8, 0.5, 0.3], dist=dist):
        out = sel.select(td, valid)
        sent += out.sum(axis=1)
        offered += valid.sum(axis=1)
    np.testing.assert_allclose(sent / offered, b, atol=0.02)


# ----------------------------------------------------------------------------- invalid rows


@pytest.mark.parametrize(
    "mode,kwargs",
    WINDOWED
    + [
        ("stochastic", {}),
        ("stochastic", {"stochastic_normaliser": "window"}),
        ("uniform", {}),
        ("all", {}),
    ],
)
@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")
def test_invalid_rows_never_selected_and_never_enter_state(mode, kwargs):
    """Two selectors fed the same valid rows, one also fed invalid rows with huge |td|, must
    agree on every later selection: invalid rows left no trace in the window / moments."""
    rng = np.random.default_rng(15)
    a = make_selector(mode, 3, bandwidth=0.3, window=20, seed=1, **kwargs)
    b = make_selector(mode, 3, bandwidth=0.3, window=20, seed=1, **kwargs)
    for td, valid in fragments(rng, 3, 10, 8, [1.0, 0.6, 0.3]):
        out_a = a.select(td, valid)
        out_b = b.select(np.where(valid, td, rng.exponential(size=td.shape)), valid)
        assert not (out_a & ~valid).any()
        np.testing.assert_array_equal(out_a, out_b)


# ----------------------------------------------------------------------------- state round trip


ROUND_TRIP = [
    ("quantile", {}),
    ("gaussian", {}),
    ("gaussian", {"gaussian_scale": "variance"}),
    ("gaussian", {"running_moments": True}),
    ("stochastic", {}),
    ("stochastic", {"stochastic_normaliser": "window", "stochastic_alpha": 0.7}),
    ("uniform", {}),
]


@pytest.mark.parametrize("mode,kwargs", ROUND_TRIP)
def test_state_dict_round_trip_gives_identical_selections(mode, kwargs):
    rng = np.random.default_rng(16)
    frags = fragments(rng, 3, 15, 12, [1.0, 0.7, 0.4], dist="lognormal")
    a = make_selector(mode, 3, bandwidth=0.25, window=24, seed=11, **kwargs)
    for td, valid in frags[:5]:
        a.select(td, valid)
    state = a.state_dict()
    saved = copy.deepcopy(state)
    after_a = [a.select(td, valid) for td, valid in frags[5:]]  # must not mutate `state`
    for key in saved:
        if isinstance(saved[key], np.ndarray):
            np.testing.assert_array_equal(state[key], saved[key])

    # a fresh selector with a different seed, loaded from the snapshot, replays a exactly
    b = make_selector(mode, 3, bandwidth=0.25, window=24, seed=999, **kwargs)
    b.load_state_dict(state)
    after_b = [b.select(td, valid) for td, valid in frags[5:]]
    for x, y in zip(after_a, after_b):
        np.testing.assert_array_equal(x, y)
    # rewinding a itself works too (the load copies, so b's run did not alter the snapshot)
    a.load_state_dict(saved)
    for (td, valid), x in zip(frags[5:], after_a):
        np.testing.assert_array_equal(a.select(td, valid), x)
    # and the snapshot actually carries state: a fresh selector without it diverges somewhere
    c = make_selector(mode, 3, bandwidth=0.25, window=24, seed=999, **kwargs)
    diverged = any((c.select(td, valid) != x).any() for (td, valid), x in zip(frags[5:], after_a))
    assert diverged


@pytest.mark.parametrize("mode,kwargs", ROUND_TRIP)
def test_a_bandwidth_changed_at_run_time_selects_as_one_built_with_it_and_is_saved(mode, kwargs):
    """Population-based training sets b between fragments: the selector then agrees with one
    built at that b (same history), and its state carries the new b to a resumed run."""
    rng = np.random.default_rng(5)
    frags = fragments(rng, 3, 12, 12, [1.0, 0.7, 0.4], dist="lognormal")
    changed = make_selector(mode, 3, bandwidth=0.25, window=24, seed=3, **kwargs)
    built = make_selector(mode, 3, bandwidth=0.4, window=24, seed=3, **kwargs)
    for td, valid in frags[:4]:
        changed.select(td, valid)
        built.select(td, valid)
    changed.bandwidth = 0.4
    assert changed.bandwidth == 0.4
    resumed = make_selector(mode, 3, bandwidth=0.25, window=24, seed=3, **kwargs)
    resumed.load_state_dict(copy.deepcopy(changed.state_dict()))
    assert resumed.bandwidth == 0.4
    shared = 0
    for td, valid in frags[4:]:
        expected = built.select(td, valid)
        np.testing.assert_array_equal(changed.select(td, valid), expected)
        np.testing.assert_array_equal(resumed.select(td, valid), expected)
        shared += int(expected.sum())
    assert shared > 0


class _Indices:
    """A user's rule that returns the indices of each sender's 2 largest |td| (not a mask)."""

    bandwidth = 0.25

    def select(self, td_abs, valid):
        return np.argsort(-td_abs, axis=1)[:, :2]

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


class _Stateless:
    bandwidth = 0.25

    def select(self, td_abs, valid):
        return valid.copy()


def test_a_users_selection_rule_is_checked_before_it_relays():
    """A rule registered from Python: one without a state (checkpoints save it) is refused when
    built; one that answers with indices instead of a mask is refused at its first fragment
    (bitwise-anded with the valid steps, it once relayed about half of them whatever their
    |td|)."""
    SELECTORS.add("indices", SelectionRule(lambda s: _Indices(), True))
    SELECTORS.add("stateless", SelectionRule(lambda s: _Stateless(), True))
    try:
        def config(select: str):
            return build_config({"env": {"name": "corridor", "settings": {"n_agents": 3, "length": 4, "max_steps": 12}}, "total_steps": 200,
                                 "eval": {"interval": 0}, "sharing": {"select": select, "bandwidth": 0.25},
                                 "dqn": {"learning_starts": 50, "buffer_size": 300, "batch_size": 8}, "model": {"hiddens": [8], "head_hidden": 8}})

        with pytest.raises(ConfigError, match=r"the selector of sharing\.select=stateless \(_Stateless\) lacks \['state_dict', 'load_state_dict'\]"):
            build_run(config("stateless"), None, verbose=False)
        run = build_run(config("indices"), None, verbose=False)
        with pytest.raises(ConfigError, match=r"_Indices\.select returned a ndarray int64 of shape \(3, 2\); it must return a boolean mask of the scores' shape \(3, \d+\)"):
            run.train()
        run.close()
    finally:
        SELECTORS.remove("indices")
        SELECTORS.remove("stateless")
