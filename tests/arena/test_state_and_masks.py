"""The rollout carries the env's global state and action masks to every policy: policies act
only within the masks (the test env raises on a forbidden action), and fragments hold
``state [T, W, S]`` and ``action_mask [T, W, N_p, A]`` with their successors."""

import numpy as np
import pytest

from relayrl.core.errors import EnvError
from relayrl.arena.policy import RandomPolicy
from relayrl.arena.rollout import Rollout
from relayrl.envs import SyncVectorEnv, make_env_factory, make_vector_env
from relayrl.experiment import build_run, build_config


def _config(**extra) -> dict:
    return {
        "preset": "masked",
        "env": {"name": "testenvs.masked", "num_envs": 3, **extra.pop("env", {})},
        "total_steps": 300,
        "report_interval": 150,
        "eval": {"interval": 300, "episodes": 2},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 60, "buffer_size": 600, "batch_size": 8, "epsilon_start": 0.5, "epsilon_steps": 200},
        "policies": {"learner": {}, "rand": {"kind": "random"}},
        "match": [{"agent": ["learner", "rand"]}],
        **extra,
    }


@pytest.mark.parametrize("vector", ["sync", "subproc"])
def test_fragments_carry_state_and_masks_and_every_action_is_allowed(vector):
    run = build_run(build_config(_config(env={"vector": vector})), None, verbose=False)
    try:
        run.start()
        for _ in range(20):  # 60 env steps: random start, epsilon-greedy, and the random policy
            fragments = run.collector.collect(run.n_steps, 0).fragments
            for pid, f in fragments.items():
                t = f["reward"].shape[0]
                assert "state" not in f, "no learner of the run reads the state: the env is not asked for it"
                assert f["action_mask"].shape == (t, 3, 1, 4) and f["next_action_mask"].shape == (t, 3, 1, 4)
                chosen = np.take_along_axis(f["action_mask"], f["action"][..., None], axis=-1)
                assert chosen.all(), pid
            run.learners["learner"].observe(fragments["learner"])
        rows = run.train()  # greedy evaluation runs under the masks too
    finally:
        run.close()
    assert rows[-1]["env_steps"] == 300 and np.isfinite(rows[-1]["eval_reward_mean"])


def test_the_state_reaches_the_fragments_where_a_learner_reads_it():
    """QMIX's mixer reads the global state: the run's env computes it, and it is the env's
    (this env's state holds the agents' masks, the first agent's first)."""
    config = {**_config(), "policies": {}, "match": [], "qmix": {"batch_size": 4, "buffer_size": 50, "max_episode_length": 10, "hidden": 16}}
    run = build_run(build_config(config), None, verbose=False)
    try:
        run.start()
        (f,) = run.collector.collect(run.n_steps, 0).fragments.values()
        t = f["reward"].shape[0]
        assert f["state"].shape == (t, 3, 9) and f["next_state"].shape == (t, 3, 9)
        np.testing.assert_array_equal(f["state"][..., :4], f["action_mask"][:, :, 0])
    finally:
        run.close()


def test_a_pettingzoo_envs_global_state_reaches_the_fragments():
    pytest.importorskip("mpe2")
    factory = make_env_factory("mpe2.simple_spread_v3", {"max_cycles": 5, "N": 3})
    venv = make_vector_env(factory, 2)
    spec = venv.groups[0]
    rollout = Rollout(venv, {"r": RandomPolicy(spec, 0)}, [{spec.name: "r"}])
    rollout.reset(0)
    fragment = rollout.collect(4, 0)["r"]
    reference = factory.adapter().env
    assert fragment["state"].shape == (4, 2, *reference.state_space.shape) and "action_mask" not in fragment
    venv.close()


def test_without_state_or_masks_fragments_have_neither():
    venv = SyncVectorEnv(make_env_factory("corridor", {"n_agents": 2, "length": 3, "max_steps": 5}), 2)
    spec = venv.groups[0]
    rollout = Rollout(venv, {"r": RandomPolicy(spec, 0)}, [{spec.name: "r"}])
    rollout.reset(0)
    assert set(rollout.collect(3, 0)["r"]) == {"obs", "valid", "action", "reward", "next_obs", "terminated", "truncated", "over"}


def test_a_dqn_learns_the_best_allowed_action():
    """Action 0 pays 1 where allowed (half the steps): acting at random within the masks
    earns about 2.5 per agent per 10-step episode, the best allowed action 5."""
    config = build_config(_config(
        env={"num_envs": 4},
        total_steps=2000,
        report_interval=1000,
        eval={"interval": 2000, "episodes": 10},
        model={"hiddens": [32], "head_hidden": 32},
        dqn={"learning_starts": 200, "buffer_size": 2000, "epsilon_start": 1.0, "epsilon_end": 0.05, "epsilon_steps": 800, "lr": 1e-3},
        policies={},
        match=[],
    ))
    run = build_run(config, None, verbose=False)
    assert "next_action_mask" in run.learners["agent"].fields
    rows = run.train()
    run.close()
    assert rows[-1]["eval_reward_mean"] >= 9.0  # two agents, 10 greedy episodes


@pytest.mark.parametrize("learner", [{}, {"qmix": {"batch_size": 4, "buffer_size": 50, "max_episode_length": 10, "hidden": 16}}], ids=["dqn", "qmix"])
def test_a_mask_that_allows_an_agent_of_the_episode_nothing_stops_the_run(learner):
    """Acting on it would take a forbidden action (0, say) and learn on: the run stops at the
    step the env gave the empty mask, naming the agent, its group and its env copy."""
    config = {**_config(env={"settings": {"stuck_at": 4}}), **learner}
    config["policies"] = {"learner": {}, "rand": {"kind": "random"}} if not learner else {}
    config["match"] = [{"agent": ["learner", "rand"]}] if not learner else []
    run = build_run(build_config(config), None, verbose=False)
    with pytest.raises(EnvError, match=r"action mask allows agent 'agent_1' of group 'agent' in env copy 0 no action at env step [\d,]+: .*allow a no-op"):
        run.train()
    run.close()
