"""Self-play: the opponent plays snapshots of the learner (its networks when a round
began), one drawn per round from the latest ``keep``, fixed while the round lasts; the
table counts the learner's games against it; a run stopped inside a round resumes exactly
(MAgent2 battle 2 v 2, DDQN)."""

import json
from pathlib import Path

import pytest
import torch

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_config, build_run
from round_runs import cut_copy, hook_module, rows, train

pytest.importorskip("magent2")

HOOKS = '''
import json, os
import torch

def _fingerprint(policy):
    def walk(x):
        if isinstance(x, torch.Tensor):
            return float(x.double().sum())
        if isinstance(x, dict):
            return sum(walk(v) for v in x.values())
        return 0.0
    return round(walk(policy.policy_state()["networks"]), 6)

def record(context):
    entry = {"when": "end" if context.results else "start", "round": context.index,
             "learner": _fingerprint(context.policies["blue"]), "opponent": _fingerprint(context.policies["red"])}
    with open(os.environ["RELAYRL_TEST_HOOKS"], "a") as handle:
        handle.write(json.dumps(entry) + "\\n")
'''


@pytest.fixture
def hooks(tmp_path, monkeypatch) -> Path:
    return hook_module(tmp_path, monkeypatch, "selfplay_hooks", HOOKS)


def _config(**extra) -> dict:
    return {
        "preset": "tiny-selfplay",
        "env": {"name": "battle", "num_envs": 2, "settings": {"map_size": 12, "max_cycles": 30}},
        "policies": {"blue": {}, "red": {"kind": "snapshot", "of": "blue"}},
        "selfplay": {"learner": "blue", "opponent": "red", "groups": ["blue", "red"], "keep": 2},
        "rounds": [{"steps": 240}] * 4,
        "report_interval": 120,
        "checkpoint_interval": 120,
        "keep_checkpoints": 20,
        "eval": {"interval": 0},
        "dqn": {"learning_starts": 60, "buffer_size": 2000, "batch_size": 16},
        **extra,
    }


def _table(run_dir: Path) -> list[dict]:
    return rows(run_dir / "selfplay.csv")


def test_the_opponent_plays_a_snapshot_of_the_learner_per_round(tmp_path, hooks):
    train(_config(hooks={"on_round_start": ["selfplay_hooks:record"], "on_round_end": ["selfplay_hooks:record"]}), tmp_path / "run")
    seen = [json.loads(line) for line in hooks.read_text().splitlines()]
    starts = {e["round"]: e for e in seen if e["when"] == "start"}
    ends = {e["round"]: e for e in seen if e["when"] == "end"}
    snapshots = {"blue@0": starts[0]["learner"], **{f"blue@{k + 1}": ends[k]["learner"] for k in ends}}
    assert starts[0]["opponent"] == starts[0]["learner"]  # round 0: the learner's first networks
    assert ends[3]["learner"] != starts[0]["learner"]  # the learner learned
    table = _table(tmp_path / "run")
    assert [int(r["round"]) for r in table] == [0, 1, 2, 3]
    for k, row in enumerate(table):
        assert starts[k]["opponent"] == snapshots[row["opponent"]] == ends[k]["opponent"]  # drawn, then fixed for the round
        drawn = int(row["opponent"].removeprefix("blue@"))
        assert max(0, k - 1) <= drawn <= k  # from the latest keep=2 snapshots
        assert int(row["wins"]) + int(row["draws"]) + int(row["losses"]) >= 2 * 240 // (2 * 30)  # every copy's games counted
    assert [int(r["pool"]) for r in table] == [1, 2, 2, 2]


def test_self_play_stopped_inside_a_round_resumes_exactly(tmp_path):
    config = _config(selfplay={"learner": "blue", "opponent": "red", "groups": ["blue", "red"], "keep": 2, "sampling": "wins"},
                     rounds=[{"steps": 240}] * 3)
    straight = train(config, tmp_path / "a")
    cut_copy(tmp_path / "a", tmp_path / "b", 360)  # inside round 1
    resumed = train(config, tmp_path / "b")
    assert _table(tmp_path / "a") == _table(tmp_path / "b")
    for pid in ("blue", "red"):
        a, b = straight.policies[pid].policy_state()["networks"], resumed.policies[pid].policy_state()["networks"]
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"policies": {"blue": {}, "red": {"kind": "frozen", "checkpoint": "x"}}}, "kind: snapshot"),
        ({"policies": {"blue": {}, "red": {"kind": "snapshot"}}}, "needs of="),
        ({"selfplay": None}, "name one as selfplay.opponent"),
        ({"rounds": [], "total_steps": 240}, "give the run rounds"),
    ],
)
def test_bad_self_play_is_refused_before_training(change, message):
    with pytest.raises(ConfigError, match=message):
        build_config({**_config(), **change})


def test_self_play_between_unlike_groups_names_them_before_training(tmp_path):
    """mpe2's simple_tag: the learner's 1 agent against a snapshot of it on the 3 adversaries'
    side (other observations) cannot be, and is refused before anything trains."""
    pytest.importorskip("mpe2")
    config = _config(env={"name": "mpe2.simple_tag_v3", "settings": {"max_cycles": 25}}, policies={"agent": {}, "adversary": {"kind": "snapshot", "of": "agent"}},
                     selfplay={"learner": "agent", "opponent": "adversary", "groups": ["agent", "adversary"]})
    with pytest.raises(ConfigError, match=r"selfplay.groups 'agent' and 'adversary' are not alike \(1 entity, observations \(14,\), 5 actions against 3, "
                                          r"\(16,\), 5\): self-play's opponent is a snapshot of its learner"):
        build_run(build_config(config), tmp_path / "run", verbose=False)
    assert not (tmp_path / "run").exists()
