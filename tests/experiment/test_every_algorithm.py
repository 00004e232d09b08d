"""Every registered algorithm, under the local learner pool and the Ray one (a learner actor
per policy): it acts, learns, checkpoints, and a run stopped at a checkpoint and resumed
writes the same metrics as one that ran straight through. A new algorithm joins this test
by registering."""

import math

import pytest

from relayrl.algos import ALGORITHMS
from relayrl.experiment import build_config, build_run
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints
from round_runs import cut_copy, rows

TIMING = ("sps", "updates_per_s", "wall_s", "sample_share")
POOLS = {"local": {"kind": "local"}, "ray": {"kind": "ray", "runners": 1, "learners": "actors", "learner_cpus": 0.5, "fragment_steps": 4}}


def _config(algo: str, backend: dict) -> dict:
    """A run of a few hundred env steps that the algorithm's learner can train on: two small
    cooperative-navigation games for centralised critics, whole
    episodes of a small Predator-Prey for a learner of a group's agents together, two Pendulum copies for Box
    actions, the corridor for discrete ones; rollouts of 16 steps of two corridor copies for
    on-policy learners, collected 6 steps at a time so that checkpoints fall inside rollouts."""
    entry = ALGORITHMS[algo]
    run = {"preset": f"every-{algo}", "total_steps": 400, "report_interval": 100, "checkpoint_interval": 200, "keep_checkpoints": 4,
           "eval": {"interval": 200, "episodes": 2}, "backend": backend}
    if entry.capabilities.on_policy:
        section = {"algo": algo, "rollout_length": 16, "hidden": [16], **({"critic_input": "joint_obs"} if algo == "mappo" else {})}
        corridor = {"name": "corridor", "settings": {"n_agents": 2, "length": 3, "max_steps": 8}, "num_envs": 2}
        shared = {"sharing": {"select": "all"}} if entry.capabilities.select else {}
        return {**run, "env": corridor, entry.section: section, "backend": {**backend, "fragment_steps": 6}, **shared}
    if entry.section == "centralised":
        section = {"algo": algo, "random_steps": 100, "hidden": [16], "batch_size": 16, "buffer_size": 500, "fragment_length": 4, "updates_per_fragment": 1}
        navigation = {"name": "cooperative-navigation", "settings": {"n_agents": 2, "max_cycles": 20}, "num_envs": 2}
        return {**run, "env": navigation, entry.section: section}
    if entry.capabilities.centralised:
        game = {"n_predators": 3, "n_stags": 1, "x_size": 4, "y_size": 4, "max_cycles": 20}
        section = {"algo": algo, "max_episode_length": 20, "batch_size": 2, "buffer_size": 20, "target_update_episodes": 5}
        return {**run, "env": {"name": "predator-prey", "settings": game}, entry.section: section}
    if "continuous" in entry.capabilities.actions:
        section = {"algo": algo, "random_steps": 100, "hidden": [16], "batch_size": 16, "buffer_size": 500}
        return {**run, "env": {"name": "Pendulum-v1", "settings": {"n_agents": 2}}, entry.section: section}
    dqn = {"learning_starts": 100, "buffer_size": 500, "batch_size": 8}
    return {**run, "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 3, "max_steps": 8}},
            "model": {"hiddens": [16], "head_hidden": 16}, "dqn": dqn}


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=3, include_dashboard=False, log_to_driver=False)  # not another test's cluster
    yield
    ray.shutdown()


# learners whose Ray path another default test runs with a resume: SUPER's DQN learner actors
# under population-based training (tests/arena/test_ray_runners.py)
RAY_ELSEWHERE = {"dqn"}


def _cases() -> list:
    """Every algorithm in every pool; on Ray, the algorithms after the first of each learner
    kind, section and sharing are marked slow (their Ray path is that learner's, already run),
    and so are those of ``RAY_ELSEWHERE``."""
    cases, seen = [], set()
    for algo in ALGORITHMS:
        entry = ALGORITHMS[algo]
        kind = (entry.section, entry.learner, entry.capabilities.select)
        cases.append(pytest.param(algo, "local", id=f"{algo}-local"))
        slow = kind in seen or algo in RAY_ELSEWHERE
        cases.append(pytest.param(algo, "ray", id=f"{algo}-ray", marks=[pytest.mark.slow] if slow else []))
        seen.add(kind)
    return cases


@pytest.mark.parametrize(("algo", "pool"), _cases())
def test_every_algorithm_acts_learns_checkpoints_and_resumes_exactly(algo, pool, tmp_path, request):
    if pool == "ray":
        request.getfixturevalue("local_ray")
    _trains_and_resumes_exactly(build_config(_config(algo, POOLS[pool])), tmp_path)


@pytest.mark.parametrize("algo", ["masac", "matd3"])
def test_a_common_critic_resumes_exactly(algo, tmp_path):
    """The team's one critic (``critic: common``) is state like the per-agent ones."""
    settings = _config(algo, POOLS["local"])
    _trains_and_resumes_exactly(build_config({**settings, "centralised": {**settings["centralised"], "critic": "common"}}), tmp_path)


def _trains_and_resumes_exactly(config, tmp_path) -> None:
    straight = build_run(config, tmp_path / "straight", verbose=False)
    straight.train()
    straight.close()
    last = straight.reporter.history[-1]
    assert last["env_steps"] >= 400 and last["agent_steps"] > 0
    assert last["updates"] > 0 and math.isfinite(last["td_loss"]), "it learned"
    assert math.isfinite(last["eval_reward_mean"]), "it acted greedily in an evaluation"
    saved = [checkpoint_steps(path) for path in list_checkpoints(tmp_path / "straight" / "checkpoints")]
    assert len(saved) == 2 and saved[-1] >= 400, "a checkpoint every 200 env steps (at the fragment that reaches them)"

    cut_copy(tmp_path / "straight", tmp_path / "resumed", saved[0])  # as if it had stopped there
    again = build_run(config, tmp_path / "resumed", verbose=False)
    again.train()
    again.close()
    assert again.reporter.history[0]["env_steps"] > saved[0], "it resumed from the first checkpoint"
    assert rows(tmp_path / "resumed" / "metrics.csv", TIMING) == rows(tmp_path / "straight" / "metrics.csv", TIMING)
