"""``relayrl reproduce dase``: the grid in the issue's order, the paper's score, and the
report written from real (tiny) runs."""

import csv
import math
from pathlib import Path

from relayrl.cli import main
from relayrl.experiment.grid import Job, command, progress
from relayrl.experiment.papers.common import final_reward
from relayrl.experiment.papers.dase import LAST_EVALUATIONS, PAPER_TABLES, common_step_table, grid
from relayrl.experiment.presets import PRESETS, load_preset


def test_grid_puts_td3_vs_dase_first_seed_by_seed_and_every_preset_exists():
    jobs = grid(["halfcheetah", "swimmer"], None, 3, None)
    assert all(j.preset in PRESETS for j in jobs)
    assert [j.preset for j in jobs[:4]] == ["halfcheetah-td3", "halfcheetah-dase-td3", "swimmer-td3", "swimmer-dase-td3"]
    assert [j.seed for j in jobs[:12]] == [0] * 4 + [1] * 4 + [2] * 4
    assert [j.preset for j in jobs[12:15]] == ["halfcheetah-dase-td3-es"] * 3 and {j.steps for j in jobs} == {300_000}
    assert jobs[15].preset == "halfcheetah-dase-td3-kl"  # ES-DASE on the first task only
    assert [j.preset for j in grid(["swimmer"], ["dase-td3-es"], 1, 1_000_000)] == ["swimmer-dase-td3-es"]


def test_score_is_the_mean_of_the_last_ten_evaluations_at_the_step():
    rows = [{"env_steps": s, "eval_reward_mean": float(s // 1000)} for s in range(1000, 15001, 1000)]
    rows.insert(3, {"env_steps": 3500, "eval_reward_mean": math.nan})  # reports without evaluation are skipped
    assert final_reward(rows, 12_000, LAST_EVALUATIONS) == sum(range(3, 13)) / 10
    assert math.isnan(final_reward(rows, 20_000, LAST_EVALUATIONS))  # not there yet
    assert math.isnan(final_reward(rows[:5], 5000, LAST_EVALUATIONS))  # fewer than ten evaluations


def _write_run(results: Path, preset: str, seed: int, evals: list[float]) -> None:
    run = results / "runs" / f"{preset}-{load_preset(preset).config_hash()}" / str(seed)
    run.mkdir(parents=True)
    with (run / "metrics.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["env_steps", "eval_reward_mean"])
        writer.writeheader()
        writer.writerows({"env_steps": 1000 * (i + 1), "eval_reward_mean": v} for i, v in enumerate(evals))


def test_runs_in_progress_are_compared_at_the_step_all_of_them_reached(tmp_path):
    _write_run(tmp_path, "swimmer-td3", 0, [1.0] * 12)  # 12k steps
    _write_run(tmp_path, "swimmer-td3", 1, [3.0] * 15)
    _write_run(tmp_path, "swimmer-td3", 2, [5.0] * 3)  # a seed just started: left out
    _write_run(tmp_path, "swimmer-dase-td3", 0, list(range(20)))  # 20k: scored at 15k, evals 5..14
    assert common_step_table(tmp_path, ("swimmer", "halfcheetah")).splitlines()[2:] == [
        "| swimmer | 15,000 | 9.50 [1 seed] | 3.00 [1 seed] |"
    ]
    assert common_step_table(tmp_path, ("halfcheetah",)) is None  # nothing to compare there


def test_paper_tables_are_the_papers():
    assert PAPER_TABLES[""]["dase-td3"]["swimmer"] == 144.28
    assert PAPER_TABLES["-1m"]["dase-td3-es"]["halfcheetah"] == 8354.15


def test_reproduce_dase_runs_and_reports(tmp_path, capsys):
    root, results = tmp_path / "runs", tmp_path / "results"
    args = ["reproduce", "dase", "--tasks", "swimmer", "--algos", "td3", "dase-td3", "--seeds", "1", "--steps", "30",
            "--jobs", "2", "--out", str(root), "--results", str(results)]
    assert main(args) == 0
    assert progress(Job("swimmer-td3", 0, 30), root) == 30 and progress(Job("swimmer-dase-td3", 0, 30), root) == 30
    assert len(list((results / "runs").glob("*/0/metrics.csv"))) == 2
    tables = (results / "tables.md").read_text()
    assert "144.28" in tables and "65.63" in tables and "running (1 seed at 30 steps)" in tables
    assert "not run" in tables  # ES-DASE was not selected
    assert "| swimmer-dase-td3 | 0 | 30 | 30 | complete |" in (results / "status.md").read_text()


def test_unknown_task_is_a_clear_error(capsys):
    assert main(["reproduce", "dase", "--tasks", "pong"]) == 2
    assert "choose from halfcheetah, swimmer" in capsys.readouterr().err


def test_grid_keeps_the_dase_presets_shorter_checkpoint_interval(tmp_path):
    """A killed MuJoCo run loses at most the preset's 10k steps, not the grid's default 25k."""
    dase = command(Job("swimmer-dase-td3", 0, 300_000), tmp_path)
    assert "checkpoint_interval=10000" in dase and "total_steps=300000" in dase
    short = command(Job("swimmer-td3", 0, 4000), tmp_path)
    assert "checkpoint_interval=4000" in short
    assert "checkpoint_interval=25000" in command(Job("pursuit-ddqn", 0, 800_000), tmp_path)
