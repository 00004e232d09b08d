"""Policies by id driving an env's groups: frozen pretrained opponents, co-evolving DDQN
opponents, random and scripted ones, sharing within a group, and agents or whole groups
leaving the episode (paper 000, section 5.3 and appendix C.3; paper 004, section 3)."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from relayrl.algos import ALGORITHMS, Capabilities
from relayrl.core.errors import CheckpointError, ConfigError, PolicyError
from relayrl.experiment import build_run, build_config
from relayrl.arena.policy import FrozenPolicy, LearningPolicy, RandomPolicy, ScriptedPolicy
from relayrl.arena.policy_config import POLICY_KINDS
from relayrl.experiment.checkpoint import list_checkpoints, load_policies

TWO_TEAMS = {"name": "corridor", "settings": {"n_agents": 3, "n_walkers": 2, "length": 4, "max_steps": 12}}


def _config(total: int = 400, **extra) -> dict:
    return {
        "preset": "teams",
        "env": TWO_TEAMS,
        "total_steps": total,
        "report_interval": 200,
        "checkpoint_interval": 400,
        "eval": {"interval": 400, "episodes": 2},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 2000, "batch_size": 8, "epsilon_start": 1.0, "epsilon_steps": 300},
        **extra,
    }


def _params(policy) -> list[torch.Tensor]:
    algorithm = policy.learner.algorithm if isinstance(policy, LearningPolicy) else policy.algorithm
    return [p.detach().clone() for p in algorithm.online.parameters()]


def _pretrain(root: Path) -> Path:
    run = build_run(build_config(_config()), root / "pretrain", verbose=False)
    run.train()
    run.close()
    return root / "pretrain"


def test_each_group_has_its_own_learning_policy():
    run = build_run(build_config(_config()), None, verbose=False)
    assert [(name, p.spec.n_agents, type(p)) for name, p in run.policies.items()] == [
        ("runner", 3, LearningPolicy), ("walker", 2, LearningPolicy)
    ]
    assert run.learners["runner"] is not run.learners["walker"]


def test_frozen_team_loads_the_pretrained_networks_and_never_learns(tmp_path):
    pretrained = load_policies(list_checkpoints(_pretrain(tmp_path) / "checkpoints")[-1])["walker"]
    config = build_config(_config(policies={"walker": {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain")}}))
    run = build_run(config, tmp_path / "main", verbose=False)
    walker, runner = run.policies["walker"], run.policies["runner"]
    assert isinstance(walker, FrozenPolicy) and list(run.learners) == ["runner"]
    for p, q in zip(walker.algorithm.online.state_dict().values(), pretrained["networks"]["online"].values()):
        torch.testing.assert_close(p.cpu(), q, rtol=0, atol=0)
    before_walker, before_runner = _params(walker), _params(runner)
    run.train()
    for p, q in zip(_params(walker), before_walker):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert any(not torch.equal(p, q) for p, q in zip(_params(runner), before_runner))
    assert run.venue.venv.groups[run.reporter.layout.reported].name == "runner"
    assert "policies_from" in (tmp_path / "main" / "provenance.yaml").read_text()


def test_a_policy_of_another_algorithm_than_the_runs(tmp_path):
    """A PPO run beside a frozen DQN opponent (SUPER's Table 1: SEAC or MADDPG against the
    pretrained DQN teams), and beside a learning DQN team: each policy trains with the
    section it changes."""
    pretrained = load_policies(list_checkpoints(_pretrain(tmp_path) / "checkpoints")[-1])["walker"]
    on_policy = {"algo": "ppo", "rollout_length": 20}
    frozen = {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain"), "dqn": {"learning_starts": 100}}
    run = build_run(build_config(_config(on_policy=on_policy, policies={"walker": frozen})), tmp_path / "frozen", verbose=False)
    walker = run.policies["walker"]
    assert isinstance(walker, FrozenPolicy) and walker.algo == "dqn" and run.learners["runner"].algo == "ppo"
    for p, q in zip(walker.algorithm.online.state_dict().values(), pretrained["networks"]["online"].values()):
        torch.testing.assert_close(p.cpu(), q, rtol=0, atol=0)
    run.train()
    run.close()
    run = build_run(build_config(_config(on_policy=on_policy, policies={"walker": {"dqn": {"learning_starts": 100}}})), None, verbose=False)
    before = _params(run.policies["walker"])
    run.train()
    run.close()
    assert {pid: learner.algo for pid, learner in run.learners.items()} == {"runner": "ppo", "walker": "dqn"}
    assert any(not torch.equal(p, q) for p, q in zip(_params(run.policies["walker"]), before)), "the DQN team learnt beside the PPO one"
    with pytest.raises(ConfigError, match="policies.walker sets dqn and on_policy: a policy trains one algorithm"):
        build_config(_config(policies={"walker": {"dqn": {"lr": 1e-3}, "on_policy": {"lr": 1e-3}}}))


def test_pretrained_preset_that_was_not_run_is_a_clear_error(tmp_path):
    config = build_config({**_config(), "env": {"name": "battle"}, "dqn": {"buffer_size": 100},
                           "policies": {"red": {"kind": "frozen", "pretrained": "battle-pretrain"}}})
    with pytest.raises(CheckpointError, match="relayrl train battle-pretrain --seed 0"):
        build_run(config, tmp_path / "battle-x" / "0", verbose=False)


@pytest.mark.parametrize(
    "policies, message",
    [
        ({"red": {}}, "not groups of corridor"),
        ({"runner": {"kind": "frozen"}}, "exactly one of checkpoint"),
        ({"runner": {"kind": "frozen", "checkpoint": "x"}, "walker": {"kind": "random"}}, "no policy learns"),
        ({"runner": {"checkpoint": "x", "agents": [0]}}, "agents applies to kind=frozen only"),
        ({"runner": {"checkpoint": "x", "pretrained": "y"}}, "starts from one of checkpoint=PATH or pretrained=PRESET, not both"),
        ({"runner": {"explore_from": 0.1, "explore_steps": 100}}, "a learning policy has none to schedule"),
        ({"runner": {"kind": "frozen", "checkpoint": "x", "explore_from": 0.1}}, "needs both explore_from .* and explore_steps > 0"),
        ({"runner": {"kind": "random", "dqn": {"lr": 0.1}}}, "has no networks"),
        ({"runner": {"dqn": {"lr": -1}}}, "policies.runner.dqn.lr: Input should be greater than 0"),
        ({"runner": {"dqn": {"param_sharing": True}}, "walker": {}}, None),
        ({"runner": {"dqn": {"param_sharing": True}, "sharing": {"select": "all"}}}, "policy 'runner': parameter sharing"),
    ],
)
def test_bad_policy_settings_fail_before_training(policies, message):
    if message is None:
        assert build_config(_config(policies=policies)).recipe("runner")[1].param_sharing
        return
    with pytest.raises(ConfigError, match=message):
        build_config(_config(policies=policies))


def test_co_evolving_opponents_learn_without_sharing():
    """Runners share everything within their team; the co-evolving walkers train plain DDQN."""
    opponent = {"dqn": {"double_q": True, "dueling": True, "prioritized": True}, "sharing": {"select": "none"}}
    config = build_config(_config(sharing={"select": "all"}, policies={"walker": opponent}))
    run = build_run(config, None, verbose=False)
    runner, walker = run.learners["runner"], run.learners["walker"]
    assert walker.relay is None and runner.relay is not None
    before = _params(run.policies["walker"])
    run.start()
    expected = {name: np.zeros(learner.spec.n_agents, np.int64) for name, learner in run.learners.items()}
    for _ in range(10):  # 40 env steps
        fragments = run.collector.collect(run.n_steps, 0).fragments
        for name, learner in run.learners.items():
            expected[name] += fragments[name]["valid"].sum(axis=(0, 1))
            learner.observe(fragments[name])
    # share-all: each runner holds every runner's transitions; walkers only their own
    np.testing.assert_array_equal(runner.replay.size, [expected["runner"].sum()] * 3)
    np.testing.assert_array_equal(walker.replay.size, expected["walker"])
    run.train()
    assert any(not torch.equal(p, q) for p, q in zip(_params(run.policies["walker"]), before))


def test_no_transitions_from_agents_that_left_even_when_a_whole_group_is_gone():
    run = build_run(build_config(_config()), None, verbose=False)
    run.start()
    expected = {name: np.zeros(learner.spec.n_agents, np.int64) for name, learner in run.learners.items()}
    team_gone_while_other_plays = 0
    for _ in range(100):  # 400 env steps, ~40 episodes of random walkers
        steps = run.collector.collect(run.n_steps, 0).fragments
        runners, walkers = (steps[name]["valid"].reshape(len(steps[name]["valid"]), -1) for name in ("runner", "walker"))
        team_gone_while_other_plays += int((runners.any(axis=1) & ~walkers.any(axis=1)).sum())
        for name, learner in run.learners.items():
            expected[name] += steps[name]["valid"].sum(axis=(0, 1))
            learner.observe(steps[name])
    assert team_gone_while_other_plays > 0
    for name, learner in run.learners.items():
        np.testing.assert_array_equal(learner.replay.size, expected[name])


def test_per_group_metrics_are_written(tmp_path):
    run = build_run(build_config(_config()), tmp_path, verbose=False)
    rows = run.train()
    assert {"episode_reward_mean/runner", "episode_reward_mean/walker", "td_loss/walker"} <= set(rows[-1])
    assert rows[-1]["episode_reward_mean"] == rows[-1]["episode_reward_mean/runner"]
    header = (tmp_path / "metrics.csv").read_text().splitlines()[0]
    assert "eval_reward_mean/walker" in header


def test_a_scripted_policy_acts_by_its_function_and_never_learns(tmp_path):
    config = build_config(_config(policies={"walker": {"kind": "scripted", "script": "scripted.always_right"}}))
    run = build_run(config, tmp_path, verbose=False)
    assert isinstance(run.policies["walker"], ScriptedPolicy) and list(run.learners) == ["runner"]
    rows = run.train()
    run.close()
    # walkers step right from cell 0 of 4 cells: each earns 1 at step 3, in every episode
    assert rows[-1]["eval_reward_mean/walker"] == 2.0 and rows[-1]["episode_reward_mean/walker"] == 2.0
    assert load_policies(list_checkpoints(tmp_path / "checkpoints")[-1])["walker"] == {"script": "scripted.always_right"}


@pytest.mark.parametrize(
    "script, error, message",
    [
        ("scripted.nope", ConfigError, "cannot be loaded"),
        ("scripted.wrong_shape", PolicyError, r"policy 'walker' \(script scripted\.wrong_shape\) returned actions of shape \(1,\); expected \(1, 2\)"),
        ("scripted.out_of_range", PolicyError, r"policy 'walker' \(script scripted\.out_of_range\) returned action 2 at \(copy, entity\) \(0, 0\); its actions are 0\.\.1"),
        ("scripted.fractional", PolicyError, r"returned non-integer choices \(0\.7\) for discrete actions: return integers"),
        ("scripted.raises", PolicyError, r"policy 'walker' \(script scripted\.raises\) raised KeyError: .the heuristic's lookup table has no such row."),
    ],
)
def test_a_script_that_cannot_act_is_named(script, error, message):
    """Loading, the shape, the range and integrality of its choices, and its own exceptions:
    one message naming the policy and the script."""
    with pytest.raises(error, match=message):
        run = build_run(build_config(_config(policies={"walker": {"kind": "scripted", "script": script}})), None, verbose=False)
        run.train()


def test_a_script_belongs_to_scripted_policies_only():
    with pytest.raises(ConfigError, match="scripted policy needs script"):
        build_config(_config(policies={"walker": {"kind": "scripted"}}))
    with pytest.raises(ConfigError, match="only a scripted policy takes one"):
        build_config(_config(policies={"walker": {"script": "scripted.always_right"}}))


def test_a_registered_policy_kind_drives_its_slots(register):
    register(POLICY_KINDS, "uniform", lambda build: RandomPolicy(build.spec, build.seeds[0]))
    run = build_run(build_config(_config(policies={"walker": {"kind": "uniform"}})), None, verbose=False)
    assert isinstance(run.policies["walker"], RandomPolicy) and list(run.learners) == ["runner"]


def test_an_algorithm_is_refused_on_action_spaces_its_capabilities_lack(register):
    register(ALGORITHMS, "td3-discrete", replace(ALGORITHMS["td3"], capabilities=Capabilities(frozenset({"discrete"}))))
    with pytest.raises(ConfigError, match=r"td3-discrete applies to discrete actions; Pendulum-v1 has continuous actions \(a2c, ddpg, maddpg, mappo, masac, matd3, ppo, sac, seac, td3 act on them: train one of them\)"):
        build_config({"env": {"name": "Pendulum-v1", "settings": {"n_agents": 1}}, "actor_critic": {"algo": "td3-discrete"}})
    pytest.importorskip("Box2D")  # a PettingZoo env's action spaces are known once it is built
    config = build_config({"env": {"name": "pettingzoo.sisl.multiwalker_v9"}, "actor_critic": {"algo": "td3-discrete"}})
    with pytest.raises(ConfigError, match=r"policy 'walker' trains td3-discrete, which cannot act on its slots' Box actions \(4,\) \(a2c, ddpg, maddpg, mappo, masac, matd3, ppo, sac, seac, td3 can"):
        build_run(config, None, verbose=False)


def test_a_frozen_policy_restarts_an_exploration_schedule_over_the_runs_env_steps(tmp_path):
    """SUPER's reference restores only its opponents' networks, so they explore from their
    schedule's start again: ``explore_from`` falls linearly to ``explore`` over
    ``explore_steps`` of the run's env steps; evaluations act with ``explore``."""
    frozen = {"kind": "frozen", "checkpoint": str(_pretrain(tmp_path)), "explore_from": 1.0, "explore": 0.0, "explore_steps": 1000}
    run = build_run(build_config(_config(policies={"walker": frozen})), None, verbose=False)
    walker = run.policies["walker"]
    run.start()

    def off_greedy(env_steps: int) -> float:
        """The share of the walkers' actions at ``env_steps`` that are not their greedy ones."""
        fragments = [run.collector.collect(run.n_steps, env_steps).fragments["walker"] for _ in range(50)]
        obs, acted, valid = (np.concatenate([f[k] for f in fragments]) for k in ("obs", "action", "valid"))
        greedy, _ = walker.act(obs.reshape(-1, *obs.shape[2:]), None, None)
        return float((greedy.reshape(acted.shape) != acted)[valid].mean())

    n_actions = walker.spec.n_actions
    start, middle, end = off_greedy(0), off_greedy(500), off_greedy(1000)
    assert abs(start - (1 - 1 / n_actions)) < 0.15  # epsilon 1: uniform actions
    assert abs(middle - 0.5 * (1 - 1 / n_actions)) < 0.15
    assert end == 0.0 and walker.exploration(None) == 0.0 and walker.exploration(250) == 0.75


def test_a_random_policy_acts_uniformly_and_never_learns():
    run = build_run(build_config(_config(policies={"walker": {"kind": "random"}})), None, verbose=False)
    assert isinstance(run.policies["walker"], RandomPolicy) and list(run.learners) == ["runner"]
    run.start()
    actions = np.concatenate([run.collector.collect(run.n_steps, 0).fragments["walker"]["action"].reshape(-1) for _ in range(25)])  # 100 steps x 2 walkers
    assert set(np.unique(actions)) == set(range(run.policies["walker"].spec.n_actions))


@pytest.mark.parametrize("param_sharing", [True, False])
def test_a_frozen_policy_of_more_agents_drives_fewer_entities_where_well_defined(tmp_path, param_sharing):
    """One shared parameter set drives any number of entities; a set per agent for 3 agents
    drives 2 entities with the sets its agents key names, and without it is refused with both
    counts and the fix."""
    dqn = {**_config()["dqn"], "param_sharing": param_sharing}
    if param_sharing:
        dqn["batch_size"] = 4
    run = build_run(build_config(_config(dqn=dqn)), tmp_path / "pretrain", verbose=False)
    run.train()
    run.close()
    fewer = {**TWO_TEAMS, "settings": {**TWO_TEAMS["settings"], "n_agents": 2}}
    config = build_config(_config(env=fewer, dqn=dqn, policies={"runner": {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain")}, "walker": {}}))
    if param_sharing:
        run = build_run(config, None, verbose=False)
        assert run.policies["runner"].spec.n_agents == 2 and run.train()[-1]["env_steps"] == 400
        run.close()
    else:
        with pytest.raises(CheckpointError, match=r"'runner' was trained with a parameter set per agent for 3 agents and drives 2 entities here: "
                                                  r"give it 3 slots, choose 2 of its agents' sets with the policy's agents key"):
            build_run(config, None, verbose=False)
        chosen = {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain"), "agents": [2, 0]}
        run = build_run(build_config(_config(env=fewer, dqn=dqn, policies={"runner": chosen, "walker": {}})), None, verbose=False)
        saved = load_policies(list_checkpoints(tmp_path / "pretrain" / "checkpoints")[-1])["runner"]["networks"]["online"]
        for p, q in zip(run.policies["runner"].algorithm.online.state_dict().values(), saved.values()):
            torch.testing.assert_close(p.cpu(), q[[2, 0]], rtol=0, atol=0)
        assert run.train()[-1]["env_steps"] == 400
        run.close()
        with pytest.raises(CheckpointError, match=r"'runner' has parameter sets for agents 0 to 2; its agents key names 3"):
            build_run(build_config(_config(env=fewer, dqn=dqn, policies={"runner": {**chosen, "agents": [3, 0]}, "walker": {}})), None, verbose=False)


def test_a_frozen_policy_with_the_agent_index_of_another_number_of_entities_is_refused_naming_its_inputs(tmp_path):
    """A shared policy that read a one-hot of 3 runners' index (agent_id) cannot read 2
    runners' inputs: the refusal names both widths and the number of entities, not sizes."""
    ppo = {"algo": "ppo", "rollout_length": 32, "agent_id": True, "hidden": [16]}
    run = build_run(build_config(_config(total=128, on_policy=ppo)), tmp_path / "pretrain", verbose=False)
    run.train()
    run.close()
    fewer = {**TWO_TEAMS, "settings": {**TWO_TEAMS["settings"], "n_agents": 2}}
    frozen = {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain"), "on_policy": ppo}
    config = build_config(_config(total=128, env=fewer, on_policy={**ppo, "agent_id": False}, policies={"runner": frozen, "walker": {}}))
    with pytest.raises(CheckpointError, match=r"'runner''s networks read 7 inputs per entity and this run gives it 6: it was trained on observations "
                                              r"of another size or, with agent_id, driving another number of entities"):
        build_run(config, None, verbose=False)


def test_a_frozen_policy_whose_networks_do_not_fit_names_what_differs_and_its_model_keys_fit_it(tmp_path):
    """An opponent trained with other sizes than this run's is refused naming the tensor that
    differs and the policy's ``model`` keys, which load it."""
    _pretrain(tmp_path)
    frozen = {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain")}
    config = build_config(_config(model={"hiddens": [32], "head_hidden": 16}, policies={"walker": frozen}))
    with pytest.raises(CheckpointError, match=r"networks do not fit the ones this run builds for it \(Error\(s\) in loading state_dict for .*: size mismatch "
                                              r"for fcs.0.weight: copying a param with shape torch.Size\(\[2, 4, 16\]\) from checkpoint.*\): give it the sizes it was "
                                              r"trained with, from its run's config.yaml \(dqn: policies.walker.model"):
        build_run(config, None, verbose=False)
    fitted = build_config(_config(model={"hiddens": [32], "head_hidden": 16}, policies={"walker": {**frozen, "model": {"hiddens": [16]}}}))
    run = build_run(fitted, None, verbose=False)
    assert [tuple(p.shape) for p in run.policies["walker"].algorithm.online.parameters()][0] == (2, 4, 16)
    assert [tuple(p.shape) for p in run.learners["runner"].algorithm.online.parameters()][0] == (3, 4, 32)
    run.close()
    with pytest.raises(ConfigError, match=r"policies.walker.model.hiddens.0: Input should be greater than or equal to 1 \(got 0\)"):
        build_config(_config(policies={"walker": {**frozen, "model": {"hiddens": [0]}}}))
    with pytest.raises(ConfigError, match=r"policies.walker.model sizes the Q-network dqn builds; ppo builds its networks from its on_policy section"):
        build_config(_config(policies={"walker": {**frozen, "model": {"hiddens": [16]}, "on_policy": {"algo": "ppo"}}}))


def test_a_frozen_policy_of_another_algorithm_is_told_the_settings_to_give_it(tmp_path):
    """A DQN walker frozen into a PPO run: refused naming the algorithm it was trained as and
    the policy's settings that load it."""
    _pretrain(tmp_path)
    config = build_config(_config(on_policy={"algo": "ppo", "rollout_length": 20, "hidden": [8]},
                                  policies={"walker": {"kind": "frozen", "checkpoint": str(tmp_path / "pretrain")}}))
    with pytest.raises(CheckpointError, match=r"'walker' was trained as dqn with param_sharing=False; this run has ppo with param_sharing=True: "
                                              r"give 'walker' the settings it was trained with \(its run's config.yaml\), e.g. policies\.walker: \{dqn: \{algo: dqn, param_sharing: false, \.\.\.\}\}"):
        build_run(config, None, verbose=False)
