"""Evaluation against a held-out opponent: ``eval.policies`` play only the evaluations, on
the slots ``eval.match`` gives them (MAgent2 battle 2 v 2: blue trains against a random
red and is evaluated against a scripted one, and against a frozen team from another run)."""

import csv
import math

import pytest
import torch

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_run, build_config

pytest.importorskip("magent2")

SCRIPT = '''
import os
import numpy as np

def hold(obs, spec):
    with open(os.environ["RELAYRL_TEST_CALLS"], "a") as handle:
        handle.write(f"{obs.shape[0]}\\n")
    return np.zeros(obs.shape[:2], np.int64)  # every red agent stays where it is
'''


def _config(**extra) -> dict:
    return {
        "preset": "tiny-held-out",
        "env": {"name": "battle", "num_envs": 2, "settings": {"map_size": 12, "max_cycles": 30}},
        "policies": {"red": {"kind": "random"}},
        "total_steps": 240,
        "report_interval": 120,
        "checkpoint_interval": 240,
        "eval": {"interval": 120, "episodes": 2},
        "report_group": "blue",
        "dqn": {"learning_starts": 60, "buffer_size": 2000, "batch_size": 16},
        **extra,
    }


def test_evaluations_play_the_held_out_opponent_only(tmp_path, monkeypatch):
    (tmp_path / "held_out.py").write_text(SCRIPT)
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("RELAYRL_TEST_CALLS", str(calls))
    evaluation = {"interval": 120, "episodes": 2, "policies": {"still": {"kind": "scripted", "script": "held_out.hold"}}, "match": [{"blue": "blue", "red": "still"}]}
    run = build_run(build_config(_config(eval=evaluation)), tmp_path / "run", verbose=False)
    run.train()
    run.close()
    steps = [int(n) for n in calls.read_text().split()]
    assert len(steps) == 2 * 30 and set(steps) == {2}  # two evaluations of 30 steps, 2 copies each; never in training
    with (tmp_path / "run" / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert all(math.isfinite(float(r["eval_reward_mean"])) for r in rows)


def test_a_frozen_held_out_team_comes_from_another_runs_checkpoint(tmp_path):
    both = _config(policies={"red": {}}, report_group=None)  # both teams learn
    first = build_run(build_config(both), tmp_path / "other", verbose=False)
    first.train()
    first.close()
    evaluation = {
        "interval": 120,
        "episodes": 2,
        "policies": {"veteran": {"kind": "frozen", "checkpoint": str(tmp_path / "other"), "pretrained_policy": "red"}},
        "match": [{"blue": "blue", "red": "veteran"}],
    }
    run = build_run(build_config(_config(eval=evaluation)), tmp_path / "run", verbose=False)
    run.train()
    run.close()
    assert run.policy_sources["veteran"].startswith(str(tmp_path / "other"))
    held = run.evaluator.policies["veteran"].policy_state()["networks"]
    saved = first.policies["red"].policy_state()["networks"]
    torch.testing.assert_close(held, saved, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("evaluation", "message"),
    [
        ({"policies": {"coach": {}}, "match": [{"blue": "blue", "red": "coach"}]}, "evaluation-only policies"),
        ({"policies": {"red": {"kind": "random"}}}, "ids of their own"),
        ({"match": [{"blue": "blue", "red": "nobody"}]}, "neither policies nor eval.policies"),
    ],
)
def test_bad_held_out_evaluations_are_refused_before_training(evaluation, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_config(eval={"interval": 120, **evaluation}))
