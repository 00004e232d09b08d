"""Exchanges between learners, through the learners' own methods: the SUPER relay between
learners delivers each sender's selection to every agent of every other learner (and counts
it), and a shared replay takes every learner's rows in order, tagged by agent, before any of
them draws."""

import numpy as np
import torch

from relayrl.algos.sections import ActorCriticConfig, CentralisedConfig
from relayrl.algos.off_policy import learner_plan, make_learner
from relayrl.arena.collect import LocalCollector
from relayrl.arena.policy import RandomPolicy
from relayrl.core.profiler import SectionTimer
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.replay.shared import SharedReplay
from relayrl.sharing.config import SharingConfig
from relayrl.sharing.exchange import RelayBetween, SharedReplayBetween
from components import learner, venue


def _fragment(where, policy, steps: int) -> dict:
    collector = LocalCollector({policy: RandomPolicy(where.venv.groups[0], 1)}, timer=None)
    collector.open(where)
    collector.reset(0)
    return collector.collect(steps, 0).fragments[policy]


def test_the_relay_between_learners_delivers_every_selected_transition_to_the_others():
    where = venue(copies=1)
    spec = where.venv.groups[0]
    learners = {"a": learner(spec, 0, select="all"), "b": learner(spec, 10, select="all")}
    relay = RelayBetween(["a", "b"])
    relay.connect(learners)
    fragment = _fragment(where, "runner", 8)
    before = {}
    for pid, one in learners.items():
        one.observe(fragment)
        before[pid] = one.replay.size.copy()
    relay.after_learn(learners)
    sent = dict(relay.sent)
    # select=all inside a learner relays to its own teammates too; between learners each sends what it stored itself
    assert sent["a"] == sent["b"] > 0
    for pid, one in learners.items():
        np.testing.assert_array_equal(one.replay.size, before[pid] + sent["b" if pid == "a" else "a"])
    row = relay.report({pid: {"relay_s": 0.5} for pid in learners})
    assert row["relayed_out/a"] == sent["a"] and row["relayed_out_bytes/a"] == sent["a"] * learners["a"].bytes_per_transition
    assert row["relay_seconds"] == 1.0 and relay.sent == {}, "counts start again after a report"


def test_a_shared_replay_takes_the_learners_rows_in_order_tagged_by_their_agents():
    venv = make_vector_env(make_env_factory("gym", {"env_id": "Pendulum-v1", "n_agents": 1}), 1)
    (spec,) = venv.groups
    venv.close()
    section = ActorCriticConfig(random_steps=10, hidden=[8], batch_size=4, buffer_size=100)
    sharing = SharingConfig(select="all", replay="shared", correction="dps")
    learners = {pid: make_learner(spec, "td3", section, sharing, torch.device("cpu"), [s, s + 1, s + 2, s + 3], SectionTimer())
                for pid, s in (("a", 0), ("b", 10))}
    replay = SharedReplay(learner_plan(spec, "td3", section, sharing), 0)
    exchange = SharedReplayBetween(["a", "b"], [0, 1], replay)
    exchange.connect(learners)
    steps = (5, 1, 1)
    fragment = {
        "obs": np.zeros((*steps, 3), np.float32), "next_obs": np.ones((*steps, 3), np.float32), "action": np.zeros((*steps, 1), np.float32),
        "reward": np.ones(steps, np.float32), "terminated": np.zeros(steps, bool), "truncated": np.zeros(steps, bool),
        "valid": np.ones(steps, bool), "over": np.zeros(steps[:2], bool),
    }
    for one in learners.values():
        one.observe(fragment)
    exchange.before_learn(learners)
    assert replay.size == 10
    np.testing.assert_array_equal(replay.gather(np.arange(10))["agent"], [0] * 5 + [1] * 5)


def test_teams_of_centralised_critics_relay_their_most_surprising_joint_steps_to_each_other():
    """Two MADDPG teams of the same task: each team is one sender of joint rows (every
    agent's step of one env step), selects about a half of its new rows by their agents'
    mean |TD error| and the other team stores exactly those rows, whole."""
    where = venue(copies=2)
    spec = where.venv.groups[0]
    section = CentralisedConfig(algo="maddpg", random_steps=0, batch_size=4, buffer_size=200, hidden=[8])
    sharing = SharingConfig(select="quantile", bandwidth=0.5, window=40)
    teams = {pid: make_learner(spec, "maddpg", section, sharing, torch.device("cpu"), [s, s + 1, s + 2, s + 3], SectionTimer())
             for pid, s in (("a", 0), ("b", 10))}
    relay = RelayBetween(["a", "b"])
    relay.connect(teams)
    fragments = {"a": _fragment(where, "runner", 12), "b": _fragment(venue(copies=2), "runner", 12)}
    for pid, team in teams.items():
        team.observe(fragments[pid])
    own = {pid: int(team.replay.size[0]) for pid, team in teams.items()}
    assert own == {"a": 24, "b": 24}  # one joint row per env step of each copy
    relay.after_learn(teams)
    for pid, other in (("a", "b"), ("b", "a")):
        sent = relay.sent[other]
        assert 0 < sent < 24 and teams[other].report(24)["relay"].sent.tolist() == [sent]
        rows = teams[pid].replay.storage()
        received = rows["obs"][0, own[pid] : own[pid] + sent]
        assert int(teams[pid].replay.size[0]) == own[pid] + sent
        theirs = teams[other].replay.storage()["obs"][0, : own[other]]
        assert all(any(np.array_equal(r, t) for t in theirs) for r in received), "whole joint rows of the other team"
        assert received.shape[1:] == (spec.n_agents, *spec.obs_shape)
