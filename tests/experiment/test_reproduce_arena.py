"""relayrl reproduce arena: the examples' grid, their report from copied runs, the PBT
table's best member per round, the navigation runs' env steps to each greedy return."""

import math
import subprocess
import sys

from relayrl.experiment.papers.arena import EXAMPLES, LAST_EVALUATIONS, best_per_round, grid, navigation_table, round_means
from relayrl.experiment.papers.common import final_reward
from relayrl.experiment.presets import load_preset


def test_the_grid_runs_each_scheme_and_its_baseline_seed_by_seed():
    jobs = grid(["curriculum", "pbt", "tournament"], 2)
    assert [j.preset for j in jobs[:5]] == [p for e in ("curriculum", "pbt", "tournament") for p, _ in EXAMPLES[e]]
    assert [j.seed for j in jobs] == [0] * 5 + [1] * 5
    assert [j.steps for j in jobs[:5]] == [80_000] * 4 + [120_000]


def test_the_best_member_and_the_baselines_round_means():
    lineage = [
        {"round": "0", "member": "p0", "mean_return": "0.5"},
        {"round": "0", "member": "p1", "mean_return": "1.5"},
        {"round": "1", "member": "p0", "mean_return": "2.0"},
        {"round": "1", "member": "p1", "mean_return": "nan"},
    ]
    assert best_per_round(lineage)[0] == 1.5
    rows = [{"env_steps": s, "episode_reward_mean": r} for s, r in ((50, 1.0), (100, 3.0), (150, 5.0), (200, 7.0))]
    assert round_means(rows, 2, 200) == [2.0, 6.0]
    unfinished = round_means(rows[:3], 2, 200)  # a run at 150 of 200 steps: its second round is not over
    assert unfinished[0] == 2.0 and math.isnan(unfinished[1])


def test_a_finished_runs_final_reward_takes_its_last_evaluations_however_few_and_late():
    rows = [{"env_steps": 100, "eval_reward_mean": 1.0}, {"env_steps": 200, "eval_reward_mean": 3.0}, {"env_steps": 204, "eval_reward_mean": 5.0}]
    assert final_reward(rows, 200, LAST_EVALUATIONS, after_step=True, partial=True) == 3.0
    assert final_reward(rows, 200, LAST_EVALUATIONS, partial=True) == 2.0  # up to the budget only
    assert math.isnan(final_reward(rows, 200, LAST_EVALUATIONS))  # fewer than five evaluations
    assert math.isnan(final_reward(rows[:1], 200, LAST_EVALUATIONS, after_step=True, partial=True))  # not finished


def test_the_report_of_an_empty_grid_says_what_has_not_run(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "relayrl.cli", "reproduce", "arena", "--report-only", "--out", str(tmp_path / "runs"), "--results", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "out" / "tables.md").read_text()
    assert table.count("not run") == 15 and "navigation-sac-entity" in table and "predator-prey-small-pbt-qmix" in table and "pong-pbt-ppo" in table and "pursuit-small-pbt-super" in table
    refused = subprocess.run([sys.executable, "-m", "relayrl.cli", "reproduce", "super", "--examples", "pbt", "--dry-run"], capture_output=True, text=True)
    assert refused.returncode != 0 and "--examples" in refused.stderr


def test_the_navigation_example_trains_figure_11s_three_assignments_for_the_papers_steps():
    jobs = grid(["navigation"], 1)
    assert [j.preset for j in jobs] == ["navigation-masac", "navigation-sac-entity", "navigation-sac-joint"]
    assert {j.steps for j in jobs} == {18_000_000}


def _copied_run(results, preset: str, seed: int, rows: list[tuple[int, float]]) -> None:
    """A run's metrics as ``grid.collect`` copies them: ``runs/<preset>-<hash>/<seed>/metrics.csv``."""
    run = results / "runs" / f"{preset}-{load_preset(preset).config_hash()}" / str(seed)
    run.mkdir(parents=True)
    lines = ["env_steps,episode_reward_mean,eval_reward_mean", *(f"{s},{e / 2},{e}" for s, e in rows)]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")


def test_the_navigation_table_gives_the_first_env_step_at_each_greedy_return_over_the_seeds_that_reached_it(tmp_path):
    _copied_run(tmp_path, "navigation-masac", 0, [(100, 50.0), (200, 320.0), (300, 610.0), (400, 820.0)])
    _copied_run(tmp_path, "navigation-masac", 1, [(100, 310.0), (200, 290.0), (300, 650.0)])
    _copied_run(tmp_path, "navigation-sac-joint", 0, [(100, 20.0), (200, float("nan")), (300, 30.0)])
    lines = navigation_table(tmp_path).splitlines()
    masac, entity, joint = lines[2:]
    # greedy: the seeds' means of their evaluations, 450 and 416.67; seed 0 first passes 300 at 200 and seed 1 at
    # 100; both pass 600 at 300; only seed 0 reaches 800
    assert masac.endswith("| 2 | 300-400 | 433.33 (16.67) | 150 (2 of 2) | 300 (2 of 2) | 400 (1 of 2) |")
    assert "| 0 | - | - |" in entity
    assert joint.endswith("| 1 | 300 | 25.00 | - (0 of 1) | - (0 of 1) | - (0 of 1) |")
    assert navigation_table(tmp_path / "none") is None
