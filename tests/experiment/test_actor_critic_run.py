"""Actor-critic runs through the one run: DASE's shared replay with agent tags, random
start steps, batched no-noise evaluation, exact resume, and configs that fail early."""

import csv
from pathlib import Path

import numpy as np
import pytest
import torch

from relayrl.core.errors import ConfigError
from relayrl.experiment import Run, build_run, build_config
from relayrl.experiment.presets import load_preset

TIMING = {"sps", "updates_per_s", "wall_s"}


def _config(k: int, total: int, sharing: dict | None = None, algo: str = "td3", **extra) -> dict:
    return {
        "preset": "pendulum",
        "env": {"name": "gym", "settings": {"env_id": "Pendulum-v1", "n_agents": k}},
        "total_steps": total,
        "actor_critic": {"algo": algo, "random_steps": 150, "hidden": [16, 16], "batch_size": 16, "buffer_size": 500},
        "sharing": sharing or {},
        "report_interval": 100,
        "checkpoint_interval": 300,
        "keep_checkpoints": 3,
        "eval": {"interval": 200, "episodes": 2},
        **extra,
    }


DASE = {"select": "all", "replay": "shared", "correction": "dps"}


def _rows(run_dir: Path) -> list[dict]:
    with (run_dir / "metrics.csv").open() as handle:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(handle)]


def _train(config: dict, run_dir: Path | None) -> Run:
    run = build_run(build_config(config), run_dir, verbose=False)
    run.train()
    run.close()
    return run


def test_shared_replay_holds_every_agents_rows_tagged_by_collector():
    run = _train(_config(3, 120, DASE), None)
    replay = run.learners["agent"].replay
    assert replay.n_buffers == 1 and int(replay.size[0]) == 3 * 120
    agents = replay.storage()["agent"][0, :360]
    np.testing.assert_array_equal(np.bincount(agents), [120, 120, 120])
    obs = replay.storage()["obs"][0, :360]
    assert not np.array_equal(obs[agents == 0], obs[agents == 1])  # copies seeded seed + k differ


def test_own_replays_without_sharing():
    run = _train(_config(2, 120), None)
    replay = run.learners["agent"].replay
    assert replay.n_buffers == 2 and list(replay.size) == [120, 120]


def test_random_start_then_policy_actions():
    run = build_run(build_config(_config(2, 400, DASE)), None, verbose=False)
    learner = run.learners["agent"]

    def act(env_steps: int | None) -> np.ndarray:
        return learner.act(obs, None, env_steps)[0]

    obs = np.zeros((1, 2, 3), np.float32)
    np.testing.assert_array_equal(act(None), act(None))  # evaluation: no noise
    random = act(0)
    assert random.shape == (1, 2, 1) and np.all(np.abs(random) <= 2.0)
    noisy_a, noisy_b = act(150), act(150)
    assert not np.array_equal(noisy_a, noisy_b)
    run.train()
    rows = run.reporter.history
    assert rows[0]["updates"] == 0 and rows[1]["updates"] == 51  # learning starts at random_steps=150
    assert rows[-1]["updates"] == 251
    assert all(0.0 <= r["dps_weight"] <= 1.0 for r in rows[2:])
    assert all(0.3 < r["external_fraction"] < 0.7 for r in rows[2:])


def test_evaluation_plays_each_agent_without_noise():
    run = build_run(build_config(_config(2, 100, DASE, eval={"interval": 100, "episodes": 3})), None, verbose=False)
    first, second = run.evaluator.greedy(3), run.evaluator.greedy(3)
    assert first.shape == (6, 1)
    np.testing.assert_array_equal(first, second)  # same start states, deterministic actors


@pytest.mark.parametrize(("algo", "normalize_obs"), [("td3", False), ("ddpg", True), ("sac", False)])
def test_train_n_equals_train_k_then_resume(tmp_path, algo, normalize_obs):
    """The simulators' state is checkpointed too: a resumed run is the uninterrupted one."""
    config = _config(2, 600, DASE, algo=algo)
    config["actor_critic"]["normalize_obs"] = normalize_obs
    straight = _train(config, tmp_path / "a")
    _train({**config, "total_steps": 300}, tmp_path / "b")  # mid-episode (Pendulum: 200 steps)
    resumed = _train(config, tmp_path / "b")
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    for p, q in zip(straight.learners["agent"].algorithm.actor.parameters(), resumed.learners["agent"].algorithm.actor.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    np.testing.assert_array_equal(straight.learners["agent"].replay.storage()["obs"], resumed.learners["agent"].replay.storage()["obs"])
    if normalize_obs:
        np.testing.assert_array_equal(straight.learners["agent"].algorithm.obs_normalizer.mean, resumed.learners["agent"].algorithm.obs_normalizer.mean)


def test_a_box2d_run_resumes_exactly(tmp_path):
    """Box2D worlds cannot be copied: the copies replay their episode in flight."""
    pytest.importorskip("Box2D")
    config = _config(2, 600, DASE)
    config["env"]["settings"]["env_id"] = "LunarLanderContinuous-v3"
    straight = _train(config, tmp_path / "a")
    _train({**config, "total_steps": 300}, tmp_path / "b")
    resumed = _train(config, tmp_path / "b")
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    for p, q in zip(straight.learners["agent"].algorithm.actor.parameters(), resumed.learners["agent"].algorithm.actor.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_each_agent_normalises_by_the_observations_it_collected(tmp_path):
    """DDPG's running statistics (paper 001, Table 2) are per agent and fed from the agent's
    own env copy, also when the replay is shared."""
    config = _config(2, 400, DASE, algo="ddpg")
    config["actor_critic"].update(normalize_obs=True, buffer_size=800)  # the replay keeps every row
    run = _train(config, None)
    storage = run.learners["agent"].replay.storage()
    normalizer = run.learners["agent"].algorithm.obs_normalizer
    assert normalizer.count[0] == pytest.approx(400, abs=1e-3) and normalizer.count[1] == pytest.approx(400, abs=1e-3)
    for agent in range(2):
        own = storage["obs"][0][storage["agent"][0] == agent]
        np.testing.assert_allclose(normalizer.mean[agent], own.mean(axis=0), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(normalizer.var[agent], own.var(axis=0), rtol=1e-5, atol=1e-5)
    assert not np.allclose(normalizer.mean[0], normalizer.mean[1])  # two copies, two seeds


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sharing": {"select": "all", "replay": "shared", "correction": "dps"}, "env": {"name": "pursuit"}}, "actor-critic learners"),
        ({"sharing": {"select": "quantile", "replay": "shared"}}, "sharing.select=all"),
        ({"sharing": {"select": "all", "correction": "dps"}}, "sharing.replay=shared"),
        ({"actor_critic": None}, r"dqn applies to discrete actions; Pendulum-v1 has continuous actions \(a2c, ddpg, maddpg, mappo, masac, matd3, ppo, sac, seac, td3 act on them: train one of them\)"),
        ({"env": {"name": "gym", "settings": {"env_id": "NoSuchEnv-v0"}}}, "not a registered Gymnasium env"),
        ({"env": {"name": "gym", "num_envs": 2}}, "env.num_envs=1"),
    ],
)
def test_bad_actor_critic_configs_fail_before_training(change, message):
    config = _config(2, 100, DASE)
    config.update(change)
    if change.get("env", {}).get("name") == "pursuit":
        config.pop("actor_critic")
    with pytest.raises(ConfigError, match=message):
        build_config(config)


def test_dqn_configs_reject_actor_critic_sections():
    with pytest.raises(ConfigError, match=r"td3 applies to continuous actions; pursuit has discrete actions \(a2c, dqn, maddpg, mappo, masac, ppo, qmix, seac act on them: train one of them\)"):
        build_config({"env": {"name": "pursuit"}, "actor_critic": {}})


def test_dase_presets_follow_the_paper():
    single, dase = load_preset("halfcheetah-td3"), load_preset("halfcheetah-dase-td3")
    assert single.env.settings.n_agents == 1 and dase.env.settings.n_agents == 2
    assert dase.sharing.replay == "shared" and dase.sharing.correction == "dps" and dase.sharing.divergence == "sym_kl"
    assert dase.actor_critic.buffer_size == 100_000 and load_preset("halfcheetah-dase-td3-1m").actor_critic.buffer_size == 1_000_000
    assert (dase.actor_critic.random_steps, dase.actor_critic.batch_size, dase.actor_critic.policy_delay) == (25_000, 256, 2)
    assert (dase.eval.interval, dase.eval.episodes, dase.report_interval) == (1000, 10, 1000)
    assert load_preset("swimmer-dase-td3-es").sharing.correction == "none"
    assert load_preset("ant-dase-td3-k10").env.settings.n_agents == 10
    ddpg = load_preset("halfcheetah-ddpg").actor_critic
    assert (ddpg.actor_lr, ddpg.critic_lr, ddpg.tau, ddpg.hidden, ddpg.critic_weight_decay) == (1e-4, 1e-3, 1e-3, [400, 300], 1e-2)
    assert ddpg.normalize_obs and not dase.actor_critic.normalize_obs and not load_preset("hopper-sac").actor_critic.normalize_obs
    assert load_preset("humanoid-sac").actor_critic.reward_scale == 20.0
    assert load_preset("hopper-sac").actor_critic.reward_scale == 5.0


def test_dps_diagnostic_example_reads_a_trained_dase_run(tmp_path):
    """examples/dps_at_checkpoint.py (the numbers in docs/results/dase/README.md) on a real checkpoint."""
    import re
    import subprocess
    import sys

    run_dir = tmp_path / "pendulum-dase" / "0"
    _train(_config(2, 300, DASE), run_dir)
    script = Path(__file__).resolve().parents[2] / "examples" / "dps_at_checkpoint.py"
    out = subprocess.run([sys.executable, str(script), str(run_dir), "--states", "200", "--draws", "5"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "step_0000000300" in out.stdout and "divergence sym_kl" in out.stdout
    weights = [float(w) for w in re.findall(r"\d\.\d\de[+-]\d\d", out.stdout)]
    assert len(weights) == 4 and all(0.0 <= w <= 1.0 for w in weights)
    missing = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert missing.returncode != 0 and "no config.yaml" in missing.stderr


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_super_selection_relays_actor_critic_transitions_by_td_error(algo):
    """SUPER's quantile rule on TD3 / SAC agents (a combination no paper ran): each sender
    scores its new transitions with its critic and relays about the bandwidth's share."""
    config = _config(3, 600, {"select": "quantile", "bandwidth": 0.2, "window": 100}, algo=algo)
    config["actor_critic"]["buffer_size"] = 2000
    run = _train(config, None)
    learner = run.learners["agent"]
    rows = run.reporter.history
    offered = 600 * 3
    relayed = sum(r["transitions_relayed"] for r in rows)
    assert 0.1 * offered < relayed < 0.35 * offered
    # every agent holds its own 600 transitions and what the two others relayed to it
    assert int(learner.replay.size.sum()) == 3 * 600 + 2 * relayed
    assert all(np.isfinite(r["td_loss"]) for r in rows[2:])


def test_sender_td_priorities_need_a_prioritized_replay():
    with pytest.raises(ConfigError, match="priority=sender_td sets priorities in a prioritized replay"):
        build_config(_config(2, 300, {"select": "quantile", "priority": "sender_td"}))
