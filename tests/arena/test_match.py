"""Matches place policies on entity slots (paper 004, sections 3-4): several policies in one
group, one policy over two groups and over env copies pooling its experience, bracketed
workers, ``scale``, and the errors for matches that do not fit."""

import numpy as np
import pytest

from relayrl.arena.match import compile_matches
from relayrl.core.errors import ConfigError
from relayrl.core.specs import GroupSpec
from relayrl.experiment import build_run, build_config

CORRIDOR = {"name": "corridor", "settings": {"n_agents": 3, "n_walkers": 2, "length": 4, "max_steps": 12}}
RUNNER = GroupSpec("runner", ("runner_0", "runner_1", "runner_2"), (4,), np.dtype(np.uint8), 2)
WALKER = GroupSpec("walker", ("walker_0", "walker_1"), (4,), np.dtype(np.uint8), 2)


def _config(total: int = 400, **extra) -> dict:
    return {
        "preset": "matches",
        "env": CORRIDOR,
        "total_steps": total,
        "report_interval": 200,
        "checkpoint_interval": 400,
        "eval": {"interval": 400, "episodes": 3},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 2000, "batch_size": 8, "epsilon_start": 1.0, "epsilon_steps": 300},
        **extra,
    }


def _round_trip(matches, num_envs):
    """Every slot of every copy gets one policy: scattering each policy's slot labels and
    gathering them back gives the same, and every group array is filled."""
    compiled = compile_matches(matches, (RUNNER, WALKER), num_envs)
    sizes = [(num_envs, 3), (num_envs, 2)]
    labels = [np.arange(e * n).reshape(e, n) + 100 * g for g, (e, n) in enumerate(sizes)]
    out: list = [None, None]
    for where in compiled.values():
        gathered = where.gather(labels)
        assert gathered.shape == (where.n_workers, where.spec.n_agents)
        where.scatter(gathered, out, sizes)
    for g in range(2):
        np.testing.assert_array_equal(out[g], labels[g])
    covered = [np.zeros(size, int) for size in sizes]
    for where in compiled.values():
        for s in where.segments:
            np.add.at(covered[s.group], (s.copy, s.entity), 1)
    assert all((c == 1).all() for c in covered)
    return compiled


def test_whole_groups_read_the_env_arrays_as_they_are():
    compiled = _round_trip([{"runner": "a", "walker": "b"}], 4)
    assert compiled["a"].whole_group == 0 and compiled["b"].whole_group == 1
    assert compiled["a"].spec == GroupSpec("a", RUNNER.agent_ids, (4,), np.dtype(np.uint8), 2)


def test_several_policies_in_a_group_one_policy_across_groups_and_brackets():
    compiled = _round_trip([{"runner": ["a", "b", "a"], "walker": ["b", ["c"]]}], 2)
    assert (compiled["a"].n_workers, compiled["a"].spec.n_agents) == (2, 2)
    assert compiled["b"].spec.agent_ids == ("runner_1", "walker_0") and compiled["b"].whole_group is None
    assert (compiled["c"].n_workers, compiled["c"].spec.n_agents) == (2, 1)
    single = _round_trip([{"runner": [["s"], ["s"], ["s"]], "walker": "w"}], 3)
    assert (single["s"].n_workers, single["s"].spec.n_agents) == (9, 1)


def test_the_match_list_repeats_over_the_copies():
    compiled = _round_trip([{"runner": "a", "walker": "w"}, {"runner": "b", "walker": "w"}], 4)
    (a,), (b,) = compiled["a"].segments, compiled["b"].segments
    assert sorted(set(a.copy)) == [0, 2] and sorted(set(b.copy)) == [1, 3] and compiled["w"].whole_group == 1


@pytest.mark.parametrize(
    "matches, message",
    [
        ([{"runner": ["a", "a"], "walker": "b"}], r"gives 2 slot\(s\) but group 'runner' has 3"),
        ([{"runner": "a"}], r"leaves group\(s\) \['walker'\]"),
        ([{"runner": "a", "walker": "b", "red": "c"}], r"names groups \['red'\]"),
        ([{"runner": ["a", ["a", "a"]], "walker": "b"}], "workers of 1 and 2 slots"),
        ([{"runner": [["a", "b"], "a"], "walker": "b"}], "a bracket is one worker of one policy"),
    ],
)
def test_matches_that_do_not_fit_are_named(matches, message):
    with pytest.raises(ConfigError, match=message):
        compile_matches(matches, (RUNNER, WALKER), 2)


def test_one_policy_cannot_take_two_kinds_of_space():
    other = GroupSpec("walker", ("walker_0", "walker_1"), (6,), np.dtype(np.float32), 2)
    with pytest.raises(ConfigError, match="whose spaces differ"):
        compile_matches([{"runner": "a", "walker": "a"}], (RUNNER, other), 1)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"match": [{"runner": "x", "walker": "x"}]}, r"match names policies \['x'\] that policies does not declare"),
        ({"policies": {"a": {}, "b": {}}, "match": [{"runner": "a", "walker": "a"}]}, r"policies \['b'\] drive no entity"),
        ({"policies": {"a": {}}, "match": [{"runner": 3, "walker": "a"}]}, "must be a policy id or a list"),
        ({"policies": {"a": {}}, "match": [{"runner": "a", "walker": "a"}] * 2, "env": {**CORRIDOR, "num_envs": 3}},
         "cannot repeat the 2 matches evenly"),
        ({"policies": {"a": {}}, "match": [{"runner": "a", "walker": "a"}], "scale": 2, "env": {**CORRIDOR, "num_envs": 3}},
         "scale=2 makes 2 env copies but env.num_envs=3"),
    ],
)
def test_bad_match_config_fails_before_training(extra, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_config(**extra))


def test_a_match_run_trains_pools_and_evaluates():
    """Learner ``a`` drives the first runner and both walkers of every copy (one policy across
    two groups and all copies, one worker of 3 per copy), ``b`` the second runner of even
    copies and, as two one-entity workers, the other runners of odd copies; a random policy
    the third runner of even copies; ``scale`` makes 4 copies."""
    config = build_config(_config(
        policies={"a": {}, "b": {"dqn": {"lr": 1e-3}}, "r": {"kind": "random"}},
        match=[{"runner": ["a", "b", "r"], "walker": ["a", "a"]}, {"runner": ["a", ["b"], ["b"]], "walker": ["a", "a"]}],
        scale=2,
    ))
    assert config.env.num_envs == 4
    run = build_run(config, None, verbose=False)
    assert list(run.learners) == ["a", "b"] and run.learners["b"].algorithm.optimizer.param_groups[0]["lr"] == 1e-3
    assert {pid: (s.n_agents, s.agent_ids) for pid, s in {pid: p.spec for pid, p in run.policies.items()}.items()} == {
        "a": (3, ("runner_0", "walker_0", "walker_1")), "b": (1, ("runner_1",)), "r": (1, ("runner_2",)),
    }
    run.start()
    fragments = run.collector.collect(run.n_steps, 0).fragments
    assert {pid: f["obs"].shape[1:3] for pid, f in fragments.items()} == {"a": (4, 3), "b": (6, 1), "r": (2, 1)}
    rows = run.train()
    run.close()
    # b pools its workers of both kinds of copy into its one agent; a keeps 3 agents
    sizes = {pid: learner.replay.size for pid, learner in run.learners.items()}
    assert len(sizes["a"]) == 3 and len(sizes["b"]) == 1
    assert sizes["b"][0] > sizes["a"][0] > 0
    assert {"td_loss/a", "td_loss/b", "eval_reward_mean/runner", "eval_reward_mean/walker"} <= set(rows[-1])


def test_a_policy_named_after_no_group_of_a_user_env_is_refused():
    """A user env's groups are known once it is built: the check happens there, before training."""
    config = build_config({**_config(), "env": {"name": "testenvs.masked"}, "policies": {"agents": {}}})
    with pytest.raises(ConfigError, match=r"policies \['agents'\] drive no entity.*groups of testenvs.masked: \['agent'\]"):
        build_run(config, None, verbose=False)
