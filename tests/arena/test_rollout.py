"""The one rollout: recurrent carry reset where each entity's episode ends, fragments with
the agent axis, and evaluation episodes counted once per copy or entity."""

import numpy as np
import torch

from relayrl.arena.rollout import Rollout, reset_carry
from relayrl.envs import SyncVectorEnv, make_env_factory
from relayrl.envs.gym_copies import GymCopiesEnv
from relayrl.experiment import build_config, build_run


class StepCounter:
    """Acts at random; its carry counts the steps of each entity's current episode."""

    def __init__(self, n_actions: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.n_actions = n_actions
        self.seen: list[np.ndarray] = []

    def act(self, obs, carry, env_steps, mask=None):
        carry = np.zeros(obs.shape[:2]) if carry is None else carry
        self.seen.append(carry.copy())
        return self.rng.integers(0, self.n_actions, obs.shape[:2]), carry + 1


def test_carry_is_reset_where_each_entitys_episode_ends():
    venv = SyncVectorEnv(make_env_factory("corridor", {"n_agents": 3, "length": 3, "max_steps": 7}), 4)
    policy = StepCounter(2, 0)
    rollout = Rollout(venv, {"p": policy}, [{"runner": "p"}])
    rollout.reset(5)
    expected = np.zeros((4, 3))
    ended_alone = 0
    for _ in range(60):
        np.testing.assert_array_equal(rollout.carry["p"] if rollout.carry["p"] is not None else np.zeros((4, 3)), expected)
        _, _, (step,), over = rollout.step(env_steps=0)
        done = step.terminated | step.truncated | over[:, None]
        ended_alone += int((done & ~over[:, None]).sum())  # an entity left while its copy played on
        expected = np.where(done, 0, expected + 1)
    assert ended_alone > 0 and over.dtype == bool


def test_fragments_have_the_step_and_agent_axes():
    venv = SyncVectorEnv(make_env_factory("corridor", {"n_agents": 3, "length": 5, "max_steps": 9}), 2)
    rollout = Rollout(venv, {"p": StepCounter(2, 1)}, [{"runner": "p"}])
    rollout.reset(0)
    fragment = rollout.collect(n_steps=6, env_steps=0)["p"]
    assert {k: v.shape for k, v in fragment.items()} == {
        "obs": (6, 2, 3, 5), "action": (6, 2, 3), "reward": (6, 2, 3), "next_obs": (6, 2, 3, 5),
        "terminated": (6, 2, 3), "truncated": (6, 2, 3), "valid": (6, 2, 3), "over": (6, 2),
    }
    np.testing.assert_array_equal(fragment["obs"][1:][fragment["valid"][1:]], fragment["next_obs"][:-1][fragment["valid"][1:]])


def test_reset_carry_handles_tensors_and_structures():
    ended = np.array([[True, False]])
    h = torch.ones(1, 2, 3)
    out = reset_carry((h, {"c": np.ones((1, 2, 3))}), ended)
    assert out[0][0, 0].sum() == 0 and out[0][0, 1].sum() == 3 and out[1]["c"][0, 0].sum() == 0
    assert reset_carry(None, ended) is None


def test_evaluation_counts_each_copys_first_episode_or_each_agents():
    venv = SyncVectorEnv(make_env_factory("corridor", {"n_agents": 2, "length": 3, "max_steps": 5}), 3)
    returns, cut = Rollout(venv, {"p": StepCounter(2, 2)}, [{"runner": "p"}]).episodes(seed=0)
    assert returns.shape == (3, 1) and np.all((0 <= returns) & (returns <= 2)) and cut == 0  # a runner earns 1 once
    copies = GymCopiesEnv("Pendulum-v1", 2, num_envs=2)

    class Zero:
        def act(self, obs, carry, env_steps, mask=None):
            return np.zeros((*obs.shape[:2], 1), np.float32), carry

    per_agent, cut = Rollout(copies, {"zero": Zero()}, [{copies.groups[0].name: "zero"}]).episodes(seed=0)
    assert per_agent.shape == (4, 1) and np.all(per_agent < 0) and cut == 0  # 200 steps of Pendulum's cost each


def test_evaluation_episodes_that_never_end_are_cut_at_the_cap(tmp_path, capsys):
    """A policy that always steps left never reaches the corridor's end, and the corridor's
    own limit is far away (an env without a time limit): evaluations stop at the cap and
    count the returns so far. In a run, a cap below the 39 steps a runner needs to reach the
    end of 40 cells cuts every evaluation episode, said once."""
    class Left:
        def act(self, obs, carry, env_steps, mask=None):
            return np.zeros(obs.shape[:2], np.int64), carry

    venv = SyncVectorEnv(make_env_factory("corridor", {"n_agents": 2, "length": 3, "max_steps": 10**9}), 3)
    returns, cut = Rollout(venv, {"left": Left()}, [{"runner": "left"}]).episodes(seed=0, max_steps=50)
    assert returns.shape == (3, 1) and np.all(returns == 0) and cut == 3
    config = {"preset": "endless", "env": {"name": "corridor", "settings": {"length": 40, "max_steps": 10**9}}, "total_steps": 200,
              "report_interval": 100, "eval": {"interval": 100, "episodes": 2, "max_episode_steps": 30},
              "dqn": {"learning_starts": 50, "buffer_size": 500, "batch_size": 8}}
    run = build_run(build_config(config), tmp_path / "run", verbose=False)
    rows = run.train()
    run.close()
    assert len(rows) == 2 and all(row["eval_reward_mean"] == 0 for row in rows)
    assert capsys.readouterr().err.count("2 evaluation episode(s) still ran after eval.max_episode_steps=30 steps") == 1
