"""relayrl reproduce arena: the examples' grid, their report from copied runs, the PBT
table's best member per round."""

import math
import subprocess
import sys

from relayrl.experiment.papers.arena import EXAMPLES, LAST_EVALUATIONS, best_per_round, grid, round_means
from relayrl.experiment.papers.common import final_reward


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
    assert table.count("not run") == 12 and "predator-prey-small-pbt-qmix" in table and "pong-pbt-ppo" in table and "pursuit-small-pbt-super" in table
    refused = subprocess.run([sys.executable, "-m", "relayrl.cli", "reproduce", "super", "--examples", "pbt", "--dry-run"], capture_output=True, text=True)
    assert refused.returncode != 0 and "--examples" in refused.stderr
