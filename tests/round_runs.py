"""Helpers of the round, scheme and Ray tests: a run trained to its end, a CSV's rows, a run's
copy cut back to a step (as if it had stopped there), a hook module the run imports, and a
config of DASE between learners."""

import csv
import shutil
from pathlib import Path

import pytest

from relayrl.experiment import Run, build_run, build_config


def train(config: dict, run_dir: Path | None = None) -> Run:
    run = build_run(build_config(config), run_dir, verbose=False)
    run.train()
    run.close()
    return run


def rows(path: Path, drop: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """A CSV's rows, without the ``drop`` columns (timings)."""
    with path.open() as handle:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(handle)]


def cut_copy(run_dir: Path, into: Path, step: int) -> None:
    """A copy of a finished run's directory at ``into`` without the checkpoints after ``step``:
    it resumes as if the run had stopped there (and as a run directory moved to another
    machine does), without training the same steps twice."""
    shutil.copytree(run_dir, into)
    for late in (into / "checkpoints").glob("step_*"):
        if int(late.name.removeprefix("step_")) > step:
            shutil.rmtree(late)


def hook_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str) -> Path:
    """Writes an importable module ``name`` and points RELAYRL_TEST_HOOKS at the file its
    hooks append to; returns that file."""
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "hooks.jsonl"
    monkeypatch.setenv("RELAYRL_TEST_HOOKS", str(log))
    return log


def shared_replay_config(**extra) -> dict:
    """DASE between learners: two TD3 policies, each driving one of two Pendulum copies,
    filling and drawing from one replay (``shared_replay``)."""
    return {
        "preset": "shared-replay",
        "env": {"name": "Pendulum-v1", "settings": {"n_agents": 2}},
        "total_steps": 600,
        "report_interval": 200,
        "checkpoint_interval": 300,
        "eval": {"interval": 0},
        "actor_critic": {"random_steps": 200, "buffer_size": 5000, "batch_size": 16, "hidden": [16]},
        "sharing": {"select": "all", "replay": "shared", "correction": "dps"},
        "policies": {"a": {}, "b": {}},
        "match": [{"agent": ["a", "b"]}],
        "shared_replay": {"between": ["a", "b"]},
        **extra,
    }
