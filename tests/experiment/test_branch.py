"""A branch continues a run from one of its checkpoints under a changed setting: the change
takes effect, everything else continues exactly, and what a branch cannot change is refused
before anything is written."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from relayrl.core.errors import ConfigError, RelayRLError
from relayrl.experiment import apply_overrides, build_config, build_run
from relayrl.experiment.branch import branch_run
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints

TIMING = {"sps", "updates_per_s", "wall_s"}
TOTAL, BRANCH_AT = 800, 400


def _config(**dqn) -> dict:
    return {
        "preset": "tiny",
        "env": {"name": "pursuit", "settings": {"x_size": 8, "y_size": 8, "n_evaders": 3, "n_pursuers": 3, "max_cycles": 60}},
        "total_steps": TOTAL,
        "report_interval": 200,
        "checkpoint_interval": 400,
        "keep_checkpoints": 5,
        "eval": {"interval": 400, "episodes": 2},
        "dqn": {"learning_starts": 100, "buffer_size": 300, "batch_size": 8, "target_update_interval": 150,
                "epsilon_start": 1.0, "epsilon_end": 0.1, "epsilon_steps": 600, "prioritized": True, **dqn},
    }


def _rows(run_dir: Path) -> list[dict]:
    with (run_dir / "metrics.csv").open() as handle:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(handle)]


def _resume(run_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "relayrl.cli", "resume", str(run_dir)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A run trained to the end (new rows at the replay's max priority), checkpoints every 400 steps."""
    run_dir = tmp_path_factory.mktemp("runs") / "tiny-source" / "0"
    run = build_run(build_config(_config()), run_dir, verbose=False)
    run.train()
    run.close()
    return run_dir


def _branch(source: Path, out: Path, *overrides: str, at: int | None = BRANCH_AT) -> Path:
    saved = yaml.safe_load((source / "config.yaml").read_text())
    return branch_run(source, build_config(saved), build_config(apply_overrides(saved, list(overrides))), at, out)


def test_a_branch_trains_with_its_change_and_continues_the_run_exactly_otherwise(source, tmp_path):
    td = _branch(source, tmp_path / "a", "dqn.new_priority=td")
    again = _branch(source, tmp_path / "b", "dqn.new_priority=td")
    one = _branch(source, tmp_path / "c", "dqn.new_priority=one")
    assert [checkpoint_steps(c) for c in list_checkpoints(td / "checkpoints")] == [BRANCH_AT]
    assert yaml.safe_load((td / "config.yaml").read_text())["dqn"]["new_priority"] == "td"
    entry = yaml.safe_load((td / "provenance.yaml").read_text())[-1]
    assert entry["changed"] == {"dqn.new_priority": ["max", "td"]}
    assert entry["branched_from"].endswith(f"step_{BRANCH_AT:010d}")
    for branch in (td, again, one):
        _resume(branch)
    rows = {name: _rows(path) for name, path in (("source", source), ("td", td), ("again", again), ("one", one))}
    assert all(len(r) == TOTAL // 200 for r in rows.values())
    before = BRANCH_AT // 200
    # up to the checkpoint every branch's rows are the source's; after it the branches of one
    # change are equal to each other and differ from the other change's and from the source's
    assert all(r[:before] == rows["source"][:before] for r in rows.values())
    assert rows["td"] == rows["again"]
    assert rows["td"][before:] != rows["one"][before:]
    assert rows["td"][before:] != rows["source"][before:]


def test_a_branch_refuses_what_the_checkpoint_holds_and_writes_nothing(source, tmp_path):
    with pytest.raises(ConfigError, match=r"cannot change dqn\.lr.*dqn\.new_priority"):
        _branch(source, tmp_path, "dqn.lr=0.01")
    with pytest.raises(RelayRLError, match="nothing to branch"):
        _branch(source, tmp_path, "dqn.new_priority=max")
    with pytest.raises(RelayRLError, match=r"no checkpoint at env step 500 \(its checkpoints: 400, 800\)"):
        _branch(source, tmp_path, "dqn.new_priority=td", at=500)
    assert not any(tmp_path.iterdir())
    target = _branch(source, tmp_path, "dqn.new_priority=td")
    with pytest.raises(RelayRLError, match="exists: resume it"):
        _branch(source, tmp_path, "dqn.new_priority=td")
    assert list_checkpoints(target / "checkpoints")


def test_the_command_line_branches_a_run_and_names_the_resume(source, tmp_path):
    out = subprocess.run([sys.executable, "-m", "relayrl.cli", "branch", str(source), "dqn.time_limit_as_terminal=true",
                          "--at", str(BRANCH_AT), "--out", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    (target,) = [p for p in tmp_path.glob("tiny-*/0")]
    assert f"relayrl resume {target}" in out
    refused = subprocess.run([sys.executable, "-m", "relayrl.cli", "branch", str(source), "model.hiddens=[8]", "--out", str(tmp_path)],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "cannot change model.hiddens" in refused.stderr
