"""Snapshot and frozen policies of learners that train their group's agents together:
centralised critics (their actors act per agent) and QMIX (its agents act on the group's
arrays, carrying their hidden states). A snapshot loaded with the learner's networks acts
as the learner does; self-play trains with them (a 2 v 2 zero-sum game, ``testenvs.duel``)."""

import numpy as np
import pytest
import torch

from relayrl.experiment import build_config, build_run

SECTIONS = {
    "masac": {"centralised": {"algo": "masac", "random_steps": 40, "hidden": [16], "batch_size": 16, "buffer_size": 400, "fragment_length": 20, "updates_per_fragment": 2}},
    "maddpg": {"centralised": {"algo": "maddpg", "random_steps": 40, "hidden": [16], "batch_size": 16, "buffer_size": 400, "fragment_length": 20, "updates_per_fragment": 2}},
    "qmix": {"qmix": {"hidden": 16, "batch_size": 4, "buffer_size": 40, "max_episode_length": 10}},
}


def _config(algo: str) -> dict:
    return {
        "preset": f"duel-selfplay-{algo}", "env": {"name": "testenvs.duel", "num_envs": 2}, **SECTIONS[algo],
        "policies": {"blue": {}, "red": {"kind": "snapshot", "of": "blue", "explore": 0.0}},
        "selfplay": {"learner": "blue", "opponent": "red", "groups": ["blue", "red"], "keep": 2},
        "rounds": [{"steps": 100}] * 3, "report_interval": 100, "eval": {"interval": 0}, "report_group": "blue",
    }


@pytest.mark.parametrize("algo", ["masac", "maddpg", "qmix"])
def test_a_snapshot_of_a_group_learner_acts_as_the_learner_and_self_play_trains_with_it(algo):
    run = build_run(build_config(_config(algo)), None, verbose=False)
    rows = run.train()
    blue, red = run.policies["blue"], run.policies["red"]
    red.load_policy_state(blue.policy_state(), "blue's networks")
    obs = np.eye(3, dtype=np.float32)[np.random.default_rng(0).integers(0, 3, (16, 2))]  # [W, N, 3]
    ours, carry = blue.act(obs, None, None)  # greedy
    theirs, snapshot_carry = red.act(obs, None, 0)  # its exploration is 0
    run.close()
    np.testing.assert_array_equal(ours, theirs)
    if algo == "qmix":  # the agents' memory goes on as the learner's does
        assert all(torch.equal(carry[k], snapshot_carry[k]) for k in ("h", "last")) and bool(carry["h"].abs().sum() > 0)
    assert rows[-1]["env_steps"] >= 300 and rows[-1]["updates"] > 0  # three rounds of 100 env steps (QMIX collects whole episodes)
