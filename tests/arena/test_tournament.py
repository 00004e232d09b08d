"""Round-robin tournament: every ordered pairing plays, games counted from the episodes'
group returns, Elo ratings by hand on known games, and a 2 v 2 MAgent2 battle run whose
table adds up."""

import csv
import math

import numpy as np
import pytest

from relayrl.arena.round import RoundConfig, RoundContext, RoundResults
from relayrl.arena.schemes.tournament import Tournament, TournamentConfig, round_robin
from relayrl.core.errors import ConfigError
from relayrl.experiment import build_run, build_config


def test_every_policy_meets_every_other_on_both_sides():
    matches = round_robin(["a", "b", "c"], ["red", "blue"])
    assert len(matches) == 6
    assert {(m["red"], m["blue"]) for m in matches} == {(x, y) for x in "abc" for y in "abc" if x != y}


def test_elo_by_hand():
    matches = round_robin(["a", "b"], ["red", "blue"])  # copy 0: a is red; copy 1: b is red
    # a (red) beats b; then b (red) draws with a; a third episode in copy 0, a loses
    returns = np.array([[3.0, 1.0], [2.0, 2.0], [0.0, 1.0]])
    results = RoundResults(0, 0, 100, returns, np.array([0, 1, 0]), ["red", "blue"], matches)
    scheme = Tournament(TournamentConfig(policies=["a", "b"], groups=["red", "blue"], k_factor=32), seed=0)
    scheme.on_round_end(RoundContext(0, RoundConfig(steps=100), {}, 100, results))
    a = b = 1000.0
    for score in (1.0, 0.5, 0.0):  # a's score in each game, in order
        expected = 1 / (1 + 10 ** ((b - a) / 400))
        a, b = a + 32 * (score - expected), b - 32 * (score - expected)
    rows = {r["policy"]: r for r in scheme.rows}
    assert (rows["a"]["wins"], rows["a"]["draws"], rows["a"]["losses"]) == (1, 1, 1)
    assert (rows["b"]["wins"], rows["b"]["draws"], rows["b"]["losses"]) == (1, 1, 1)
    assert scheme.ratings["a"] == pytest.approx(a) and scheme.ratings["b"] == pytest.approx(b)
    assert a < 1000  # lost the last game, when it was rated higher


def _battle(**extra) -> dict:
    return {
        "preset": "tiny-tournament",
        "env": {"name": "battle", "settings": {"map_size": 12, "max_cycles": 30}},
        "policies": {"a": {}, "b": {}, "c": {}},
        "tournament": {"policies": ["a", "b", "c"], "groups": ["red", "blue"]},
        "scale": 1,
        "rounds": [{"steps": 720}, {"steps": 720}],
        "report_interval": 360,
        "checkpoint_interval": 720,
        "eval": {"interval": 0},
        "dqn": {"learning_starts": 200, "buffer_size": 2000, "batch_size": 16},
        **extra,
    }


def test_a_battle_round_robin_writes_its_table(tmp_path):
    pytest.importorskip("magent2")
    run = build_run(build_config(_battle()), tmp_path / "run", verbose=False)
    run.train()
    run.close()
    assert run.venue.venv.num_envs == 6  # the 6 ordered pairings of 3 policies
    with (tmp_path / "run" / "tournament.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(int(r["round"]), r["policy"]) for r in rows] == [(k, p) for k in (0, 1) for p in "abc"]
    for k in (0, 1):
        table = [r for r in rows if int(r["round"]) == k]
        wins, draws, losses = (sum(int(r[c]) for r in table) for c in ("wins", "draws", "losses"))
        assert wins == losses and draws % 2 == 0
        assert (wins + losses + draws) // 2 >= 6 * 720 // (6 * 30)  # every copy finished at least 4 episodes of 30 steps
        assert math.isclose(sum(float(r["elo"]) for r in table), 3000.0, abs_tol=0.01)  # Elo moves points between players


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rounds": []}, "give the run rounds"),
        ({"tournament": {"policies": ["a", "d"], "groups": ["red", "blue"]}}, "does not declare"),
        ({"tournament": {"policies": ["a", "b"], "groups": ["red"]}}, "groups"),
    ],
)
def test_bad_tournaments_are_refused_before_training(change, message):
    pytest.importorskip("magent2")
    with pytest.raises(ConfigError, match=message):
        build_config({**_battle(), **change, "total_steps": 1440} if change.get("rounds") == [] else {**_battle(), **change})


def test_a_tournament_between_unlike_groups_names_them_before_training(tmp_path):
    """mpe2's simple_tag: 3 adversaries and 1 agent with other observations. Each policy of a
    tournament plays both sides in turn, so the two groups are named with what differs."""
    pytest.importorskip("mpe2")
    config = {**_battle(), "env": {"name": "mpe2.simple_tag_v3", "settings": {"max_cycles": 25}},
              "tournament": {"policies": ["a", "b", "c"], "groups": ["adversary", "agent"]}}
    with pytest.raises(ConfigError, match=r"tournament.groups 'adversary' and 'agent' are not alike \(3 entities, observations \(16,\), 5 actions "
                                          r"against 1, \(14,\), 5\): each policy of a tournament plays both sides in turn"):
        build_run(build_config(config), tmp_path / "run", verbose=False)
    assert not (tmp_path / "run").exists()
