"""Relay routing and bandwidth accounting (SPEC §1.1) against a brute-force double loop."""

import numpy as np
import pytest

from relayrl.sharing import Relay, RelayStats, make_selector


def brute_force(selected, valid, team, n):
    """Receiver j gets sender-major row i*M + m iff sender i selected (valid) row m, i != j,
    and both are in the team (None = everyone)."""
    members = set(range(n)) if team is None else set(team)
    m = selected.shape[1]
    mask = np.zeros((n, n * m), bool)
    for j in range(n):
        for i in range(n):
            for k in range(m):
                if i != j and i in members and j in members and selected[i, k] and valid[i, k]:
                    mask[j, i * m + k] = True
    offered = np.array([valid[i].sum() if i in members else 0 for i in range(n)])
    sent = np.array([(selected[i] & valid[i]).sum() if i in members else 0 for i in range(n)])
    return mask, offered, sent


TEAMS = [None, [0, 2, 3], [4, 1], [3], []]


@pytest.mark.parametrize("team", TEAMS)
def test_route_matches_brute_force_and_stats_are_exact(team):
    rng = np.random.default_rng(0)
    n, m, bpt = 5, 6, 37
    relay = Relay(n, team)
    tot_offered = np.zeros(n, int)
    tot_sent = np.zeros(n, int)
    tot_delivered = 0
    for _ in range(4):
        valid = rng.random((n, m)) < 0.7
        selected = valid & (rng.random((n, m)) < 0.5)
        mask = relay.route(selected, valid, bpt)
        exp_mask, offered, sent = brute_force(selected, valid, team, n)
        assert mask.shape == (n, n * m) and mask.dtype == bool
        np.testing.assert_array_equal(mask, exp_mask)
        tot_offered += offered
        tot_sent += sent
        tot_delivered += int(exp_mask.sum())
        np.testing.assert_array_equal(relay.stats.offered, tot_offered)
        np.testing.assert_array_equal(relay.stats.sent, tot_sent)
        assert relay.stats.delivered == tot_delivered
        assert relay.stats.bytes_sent == int(tot_sent.sum()) * bpt

    stats = relay.drain()
    assert isinstance(stats, RelayStats)
    np.testing.assert_array_equal(stats.offered, tot_offered)
    np.testing.assert_array_equal(stats.sent, tot_sent)
    assert stats.delivered == tot_delivered
    assert stats.bytes_sent == int(tot_sent.sum()) * bpt
    bw = stats.bandwidth()
    has = tot_offered > 0
    np.testing.assert_array_equal(bw[has], tot_sent[has] / tot_offered[has])
    assert np.isnan(bw[~has]).all()
    # drain resets the counters
    assert relay.stats.offered.sum() == relay.stats.sent.sum() == relay.stats.delivered == relay.stats.bytes_sent == 0
    assert not (relay.drain().offered.any())


def test_team_non_members_neither_send_nor_receive_and_no_self_insertion():
    n, m = 4, 3
    relay = Relay(n, team=[0, 1, 3])
    valid = np.ones((n, m), bool)
    selected = np.ones((n, m), bool)  # everyone selects everything
    mask = relay.route(selected, valid, 1).reshape(n, n, m)  # [receiver, sender, row]
    for j in range(n):
        assert not mask[j, j].any(), f"receiver {j} got its own transitions"
    assert not mask[2].any(), "non-member received"
    assert not mask[:, 2].any(), "non-member's transitions were relayed"
    for j in (0, 1, 3):
        for i in (0, 1, 3):
            assert mask[j, i].all() == (i != j)
    # each member's rows reach the other 2 members
    assert relay.stats.delivered == 3 * m * 2
    np.testing.assert_array_equal(relay.stats.sent, [m, m, 0, m])
    np.testing.assert_array_equal(relay.stats.offered, [m, m, 0, m])


def test_selected_but_invalid_rows_are_not_routed():
    relay = Relay(3)
    valid = np.array([[True, False], [False, False], [True, True]])
    selected = np.ones((3, 2), bool)
    mask = relay.route(selected, valid, 8)
    exp, offered, sent = brute_force(selected, valid, None, 3)
    np.testing.assert_array_equal(mask, exp)
    np.testing.assert_array_equal(relay.stats.sent, [1, 0, 2])
    np.testing.assert_array_equal(relay.stats.offered, [1, 0, 2])
    assert relay.stats.delivered == 3 * 2
    assert relay.stats.bytes_sent == 3 * 8
    np.testing.assert_array_equal(relay.drain().bandwidth(), [1.0, np.nan, 1.0])


def test_relay_with_quantile_selector_realises_target_bandwidth():
    """End to end: realised bandwidth = sent / offered of a quantile selector feeding a relay."""
    rng = np.random.default_rng(1)
    n, m, b, bpt = 4, 100, 0.1, 100
    sel = make_selector("quantile", n, bandwidth=b, window=1500)
    relay = Relay(n, team=None)
    sent_total = 0
    for _ in range(100):
        td = rng.exponential(size=(n, m))
        valid = rng.random((n, m)) < 0.9
        chosen = sel.select(td, valid)
        relay.route(chosen, valid, bpt)
        sent_total += int(chosen.sum())
    stats = relay.drain()
    np.testing.assert_allclose(stats.bandwidth(), b, atol=0.02)
    assert stats.bytes_sent == sent_total * bpt
    assert stats.delivered == sent_total * (n - 1)
