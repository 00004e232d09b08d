"""The local collector: fragments of every policy with their step and worker axes, finished
episodes, and a state that restores the copies exactly."""

import numpy as np

from relayrl.arena.collect import LocalCollector
from relayrl.arena.policy import RandomPolicy
from components import venue


def _collector() -> LocalCollector:
    where = venue(copies=2)
    (spec,) = where.venv.groups
    collector = LocalCollector({"runner": RandomPolicy(spec, 3)}, timer=None)
    collector.open(where)
    collector.reset(0)
    return collector


def test_collect_returns_each_policys_fragment_and_the_finished_episodes():
    got = _collector().collect(15, 0)
    fragment = got.fragments["runner"]
    assert fragment["obs"].shape[:3] == (15, 2, 3) and fragment["over"].shape == (15, 2)
    assert got.env_steps == 30 and got.restarted == {}
    assert len(got.episodes.returns) == int(fragment["over"].sum()) >= 2, "corridor episodes last at most 10 steps"


def test_a_restored_collector_and_policy_continue_exactly():
    first = _collector()
    first.collect(7, 0)
    state, acting = first.state_dict(), first.policies["runner"].state_dict()
    ahead = first.collect(9, 14).fragments["runner"]
    second = _collector()
    second.collect(4, 0)  # elsewhere: the state replaces it
    assert second.load_state_dict(state) is None
    second.policies["runner"].load_state_dict(acting)
    again = second.collect(9, 14).fragments["runner"]
    assert ahead.keys() == again.keys()
    for name in ahead:
        np.testing.assert_array_equal(ahead[name], again[name])


def test_a_state_the_env_cannot_take_is_reported_not_loaded():
    collector = _collector()
    state = collector.state_dict()
    assert collector.load_state_dict({**state, "env": None}) == "the env's state cannot be saved in a checkpoint"
