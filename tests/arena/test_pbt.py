"""Population-based training over rounds (exploit and explore): the bottom member takes a
top member's networks and optimiser state, its learning rate is perturbed, the lineage is
written per round, and a run stopped inside a round resumes exactly (small Predator-Prey,
three QMIX teams, one env copy each)."""

import json
import math
from pathlib import Path

import pytest
import torch

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_config
from round_runs import cut_copy, hook_module, rows, train

HOOKS = '''
import json, os
import torch

def record(context):
    """After the scheme: each member's learning rate and a fingerprint of its networks."""
    entry = {}
    for pid in ("a", "b", "c"):
        algorithm = context.policies[pid].learner.algorithm
        entry[pid] = {
            "lr": algorithm.optimizer.param_groups[0]["lr"],
            "weights": [float(p.detach().double().sum()) for p in algorithm.learned.parameters()],
        }
    with open(os.environ["RELAYRL_TEST_HOOKS"], "a") as handle:
        handle.write(json.dumps(entry) + "\\n")
'''
SMALL_GAME = {"n_predators": 4, "n_stags": 2, "x_size": 5, "y_size": 5, "max_cycles": 40}


@pytest.fixture
def hooks(tmp_path, monkeypatch) -> Path:
    return hook_module(tmp_path, monkeypatch, "pbt_hooks", HOOKS)


def _config(**extra) -> dict:
    return {
        "preset": "tiny-pbt",
        "env": {"name": "predator-prey", "num_envs": 3, "settings": SMALL_GAME},
        "policies": {"a": {}, "b": {}, "c": {}},
        "match": [{"predator": "a"}, {"predator": "b"}, {"predator": "c"}],
        "rounds": [{"steps": 600}, {"steps": 600}, {"steps": 600}],
        "pbt": {"population": ["a", "b", "c"], "fraction": 0.34},
        "report_interval": 300,
        "checkpoint_interval": 300,
        "keep_checkpoints": 20,
        "eval": {"interval": 0},
        "qmix": {"max_episode_length": 40, "batch_size": 4, "buffer_size": 50, "epsilon_steps": 1000, "target_update_episodes": 5},
        **extra,
    }


def _lineage(run_dir: Path) -> list[dict]:
    return rows(run_dir / "pbt.csv")


def _straight_and_resumed(config: dict, tmp_path: Path, stop: int) -> tuple:
    """The runs of an uninterrupted run and of one cut back to ``stop`` and resumed,
    after checking that both wrote the same lineage."""
    straight = train(config, tmp_path / "a")
    cut_copy(tmp_path / "a", tmp_path / "b", stop)
    resumed = train(config, tmp_path / "b")
    assert _lineage(tmp_path / "a") == _lineage(tmp_path / "b")
    return straight, resumed


def test_the_worst_member_takes_the_best_ones_networks_and_a_perturbed_learning_rate(tmp_path, hooks):
    train(_config(hooks={"on_round_end": ["pbt_hooks:record"]}), tmp_path / "run")
    rows = _lineage(tmp_path / "run")
    assert [int(r["round"]) for r in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    seen = [json.loads(line) for line in hooks.read_text().splitlines()]
    lr = {pid: 1e-3 for pid in "abc"}  # qmix's default
    for index in range(3):
        members = rows[3 * index : 3 * index + 3]
        copied = [r for r in members if r["copied_from"]]
        assert len(copied) == 1  # a third of three: one member replaced
        (row,) = copied
        means = {r["member"]: float(r["mean_return"]) for r in members}
        assert means[row["member"]] == min(means.values()) and means[row["copied_from"]] == max(means.values())
        after = seen[index]
        assert after[row["member"]]["weights"] == after[row["copied_from"]]["weights"]  # the networks, copied
        ratio = after[row["member"]]["lr"] / lr[row["copied_from"]]
        assert ratio == pytest.approx(0.8) or ratio == pytest.approx(1.2)  # the optimiser state, copied and perturbed
        lr = {pid: after[pid]["lr"] for pid in "abc"}
        assert {pid: float(r["lr"]) for pid, r in zip("abc", sorted(members, key=lambda r: r["member"]))} == pytest.approx(lr)


def test_exploration_is_copied_and_perturbed_when_asked(tmp_path):
    config = _config(pbt={"population": ["a", "b", "c"], "fraction": 0.34, "perturb": ["lr", "exploration"]})
    run = train(config, tmp_path / "run")
    table = _lineage(tmp_path / "run")
    scales = {pid: 1.0 for pid in "abc"}
    for index in range(3):
        members = {r["member"]: r for r in table if int(r["round"]) == index}
        (copied,) = [r for r in members.values() if r["copied_from"]]
        ratio = float(copied["exploration_scale"]) / scales[copied["copied_from"]]
        assert ratio == pytest.approx(0.8) or ratio == pytest.approx(1.2)
        scales = {pid: float(r["exploration_scale"]) for pid, r in members.items()}
    for pid, learner in run.learners.items():
        assert learner.exploration_scale == pytest.approx(scales[pid])
        assert learner.exploration(500) == pytest.approx(learner.algorithm.exploration(500) * scales[pid])


def test_a_population_stopped_inside_a_round_resumes_exactly(tmp_path):
    config = _config(pbt={"population": ["a", "b", "c"], "fraction": 0.34, "perturb": ["lr", "exploration"]})
    straight, resumed = _straight_and_resumed(config, tmp_path, 900)  # inside round 1
    for pid in "abc":
        a, b = straight.learners[pid].algorithm, resumed.learners[pid].algorithm
        for p, q in zip(a.learned.parameters(), b.learned.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)
        assert a.optimizer.param_groups[0]["lr"] == b.optimizer.param_groups[0]["lr"]
        assert straight.learners[pid].exploration_scale == resumed.learners[pid].exploration_scale


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rounds": [{"steps": 600}]}, "at least 2 rounds"),
        ({"pbt": {"population": ["a", "d"]}}, "not learning policies"),
        ({"policies": {"a": {}, "b": {}, "c": {"kind": "random"}}, "pbt": {"population": ["a", "c"]}}, "not learning policies"),
        ({"policies": {"a": {}, "b": {}, "c": {"dqn": {"lr": 1e-3}}}}, r"pbt\.population mixes algorithms \(a: qmix, b: qmix, c: dqn\)"),
        ({"qmix": None, "on_policy": {"algo": "ppo"}, "pbt": {"population": ["a", "b", "c"], "perturb": ["lr", "exploration"]}},
         r"pbt\.perturb has 'exploration' but \['a', 'b', 'c'\] explore by their own policies' noise or sampling.*drop 'exploration'"),
    ],
)
def test_bad_populations_are_refused_before_training(change, message):
    with pytest.raises(ConfigError, match=message):
        build_config({**_config(), **change})


def _relaying_population(perturb: list[str], factors: list[float]) -> dict:
    """Three SUPER teams (quantile selection) on the corridor, one env copy each."""
    return {
        "preset": "tiny-pbt-super",
        "env": {"name": "corridor", "num_envs": 3, "settings": {"n_agents": 3, "length": 4, "max_steps": 12}},
        "sharing": {"select": "quantile", "bandwidth": 0.5, "window": 50},
        "policies": {"a": {}, "b": {}, "c": {}},
        "match": [{"runner": "a"}, {"runner": "b"}, {"runner": "c"}],
        "rounds": [{"steps": 300}] * 4,
        "pbt": {"population": ["a", "b", "c"], "fraction": 0.34, "factors": factors, "perturb": perturb},
        "report_interval": 150,
        "checkpoint_interval": 150,
        "keep_checkpoints": 20,
        "eval": {"interval": 0},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 60, "buffer_size": 500, "batch_size": 8},
    }


def test_the_sharing_bandwidth_is_copied_perturbed_and_kept_at_most_one(tmp_path):
    run = train(_relaying_population(["bandwidth"], [2.5]), tmp_path / "run")
    table = _lineage(tmp_path / "run")
    bandwidths = {pid: 0.5 for pid in "abc"}
    for index in range(4):
        members = {r["member"]: r for r in table if int(r["round"]) == index}
        (copied,) = [r for r in members.values() if r["copied_from"]]
        source = bandwidths[copied["copied_from"]]
        assert float(copied["bandwidth"]) == pytest.approx(min(1.0, 2.5 * source))
        assert float(copied["lr"]) == float(members[copied["copied_from"]]["lr"])  # lr copied, not perturbed
        bandwidths = {pid: float(r["bandwidth"]) for pid, r in members.items()}
    assert 1.0 in bandwidths.values()  # 0.5 x 2.5 = 1.25: the cap
    for pid, learner in run.learners.items():
        assert learner.selector.bandwidth == pytest.approx(bandwidths[pid])


def test_a_relaying_population_stopped_inside_a_round_resumes_with_its_bandwidths(tmp_path):
    straight, resumed = _straight_and_resumed(_relaying_population(["lr", "bandwidth"], [0.8, 1.2]), tmp_path, 750)  # inside round 2
    for pid in "abc":
        assert straight.learners[pid].selector.bandwidth == resumed.learners[pid].selector.bandwidth
    assert {straight.learners[pid].selector.bandwidth for pid in "abc"} != {0.5}


def test_a_bandwidth_perturbation_needs_members_that_relay():
    config = _relaying_population(["bandwidth"], [0.8, 1.2])
    config["policies"] = {"a": {}, "b": {}, "c": {"sharing": {"select": "all"}}}
    with pytest.raises(ConfigError, match=r"pbt.perturb has 'bandwidth' but \['c'\] relay no transitions by a bandwidth"):
        build_config(config)


PPO_HOOKS = '''
import json, os

def record(context):
    """After the scheme: a fingerprint of each member's networks and its learning rate."""
    entry = {}
    for pid in ("a", "b", "c"):
        algorithm = context.policies[pid].learner.algorithm
        entry[pid] = {"weights": [float(p.detach().double().sum()) for p in algorithm.parameters], "lr": algorithm.optimizer.param_groups[0]["lr"]}
    with open(os.environ["RELAYRL_TEST_HOOKS"], "a") as handle:
        handle.write(json.dumps(entry) + "\\n")
'''


def test_a_generation_of_ppo_members_continues_from_the_best_one_alone(tmp_path, monkeypatch):
    """Paper 004's evolution over PPO (survivors 1, no perturbation): after every round the
    two lesser members hold the best one's networks and learning rate, and each member's
    own training reward is a column of the run's metrics."""
    log = hook_module(tmp_path, monkeypatch, "ppo_pbt_hooks", PPO_HOOKS)
    config = {
        "preset": "tiny-pbt-ppo",
        "env": {"name": "corridor", "num_envs": 3, "settings": {"n_agents": 2, "length": 4, "max_steps": 10}},
        "on_policy": {"algo": "ppo", "rollout_length": 20, "hidden": [16], "minibatches": 2, "epochs": 2},
        "policies": {"a": {"on_policy": {"lr": 1e-3}}, "b": {"on_policy": {"lr": 3e-3}}, "c": {"on_policy": {"lr": 1e-2}}},
        "match": [{"runner": "a"}, {"runner": "b"}, {"runner": "c"}],
        "rounds": [{"steps": 180}] * 3,
        "pbt": {"population": ["a", "b", "c"], "survivors": 1, "perturb": []},
        "hooks": {"on_round_end": ["ppo_pbt_hooks:record"]},
        "report_interval": 60, "checkpoint_interval": 180, "eval": {"interval": 0},
    }
    train(config, tmp_path / "run")
    table = _lineage(tmp_path / "run")
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    for index in range(3):
        members = {r["member"]: r for r in table if int(r["round"]) == index}
        means = {pid: float(r["mean_return"]) for pid, r in members.items()}
        (best,) = [pid for pid, r in members.items() if not r["copied_from"]]
        assert means[best] == max(means.values())
        assert all(members[pid]["copied_from"] == best for pid in members if pid != best)
        assert all(seen[index][pid] == seen[index][best] for pid in "abc")  # networks and learning rate, copied unperturbed
    metrics = rows(tmp_path / "run" / "metrics.csv")
    assert {"policy_reward_mean/a", "policy_reward_mean/b", "policy_reward_mean/c"} <= set(metrics[0])
    assert all(math.isfinite(float(r["policy_reward_mean/a"])) for r in metrics)


def test_survivors_leave_someone_to_replace():
    with pytest.raises(ConfigError, match=r"pbt.survivors=3 leaves no member to replace in a population of 3: choose 1 to 2"):
        build_config(_config(pbt={"population": ["a", "b", "c"], "survivors": 3}))


LR_HOOKS = '''
import json, os

def record(context):
    """After the scheme: each member's optimiser learning rate (annealed at its last update)."""
    entry = {pid: context.policies[pid].learner.algorithm.optimizer.param_groups[0]["lr"] for pid in ("a", "b", "c")}
    with open(os.environ["RELAYRL_TEST_HOOKS"], "a") as handle:
        handle.write(json.dumps(entry) + "\\n")
'''


def test_an_annealed_learning_rate_anneals_from_the_one_the_scheme_gave(tmp_path, monkeypatch):
    """PPO members with ``lr_anneal``: a member that took a perturbed learning rate at a
    round's end trains the next round from it, annealed (it once kept annealing its own
    configured rate, so the table's rate was never used)."""
    log = hook_module(tmp_path, monkeypatch, "lr_hooks", LR_HOOKS)
    config = {
        "preset": "tiny-pbt-ppo-anneal",
        "env": {"name": "corridor", "num_envs": 3, "settings": {"n_agents": 2, "length": 4, "max_steps": 10}},
        "on_policy": {"algo": "ppo", "rollout_length": 20, "hidden": [16], "minibatches": 2, "epochs": 2, "lr_anneal": True},
        "policies": {"a": {"on_policy": {"lr": 1e-3}}, "b": {"on_policy": {"lr": 3e-3}}, "c": {"on_policy": {"lr": 1e-2}}},
        "match": [{"runner": "a"}, {"runner": "b"}, {"runner": "c"}],
        "rounds": [{"steps": 180}] * 3, "total_steps": 540,
        "pbt": {"population": ["a", "b", "c"], "fraction": 0.34, "perturb": ["lr"]},
        "hooks": {"on_round_end": ["lr_hooks:record"]},
        "report_interval": 60, "checkpoint_interval": 540, "eval": {"interval": 0},
    }
    train(config, tmp_path / "run")
    table = _lineage(tmp_path / "run")
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    given = {r["member"]: float(r["lr"]) for r in table if int(r["round"]) == 0}
    kept = [r["member"] for r in table if int(r["round"]) == 1 and not r["copied_from"]]  # trained round 2 from round 1's rate
    assert any(r["copied_from"] for r in table if int(r["round"]) == 0) and kept
    for pid in kept:
        assert seen[1][pid] == pytest.approx(given[pid] * (1 - 360 / 540))
