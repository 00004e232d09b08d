"""``relayrl reproduce seac``: its grid, and the report written from real (tiny) runs."""

import pytest

from relayrl.cli import main
from relayrl.experiment.grid import Job, progress
from relayrl.experiment.papers.seac import grid, table
from relayrl.experiment.presets import PRESETS, load_preset


def test_grid_goes_seed_by_seed_over_the_variants_each_task_has():
    jobs = grid(["lbf-8x8-2p-2f-coop", "spread", "pursuit"], None, 2, None)
    assert all(j.preset in PRESETS for j in jobs)
    first = [j.preset for j in jobs if j.seed == 0]
    assert first == ["lbf-8x8-2p-2f-coop-ia2c", "lbf-8x8-2p-2f-coop-seac", "lbf-8x8-2p-2f-coop-seac-q10", "lbf-8x8-2p-2f-coop-seac-q01",
                     "spread-ippo", "spread-mappo", "pursuit-ia2c", "pursuit-seac"]
    assert [j.seed for j in jobs] == [0] * 8 + [1] * 8
    assert {j.steps for j in jobs if j.preset.startswith("pursuit")} == {800_000}, "Table 1's budget"
    assert {j.steps for j in grid(["lbf-8x8-2p-2f"], None, 1, None)} == {300_000}, "each task's own budget"
    assert [j.preset for j in grid(["lbf-10x10-3p-3f"], ["ippo", "mappo"], 1, 1000)] == ["lbf-10x10-3p-3f-ippo", "lbf-10x10-3p-3f-mappo"]


def test_the_presets_train_what_they_say():
    seac, narrow, mappo = (load_preset(name) for name in ("lbf-10x10-3p-3f-seac", "lbf-10x10-3p-3f-seac-q01", "spread-mappo"))
    assert (seac.on_policy.algo, seac.sharing.select, seac.on_policy.rollout_length, seac.env.num_envs) == ("seac", "all", 5, 4)
    assert (narrow.sharing.select, narrow.sharing.bandwidth) == ("quantile", 0.01)
    assert (mappo.on_policy.algo, mappo.on_policy.critic_input, mappo.on_policy.clip) == ("mappo", "state", 0.2)


def test_reproduce_seac_runs_and_reports(tmp_path):
    pytest.importorskip("lbforaging")
    root, results = tmp_path / "runs", tmp_path / "results"
    args = ["reproduce", "seac", "--tasks", "lbf-8x8-2p-2f-coop", "--algos", "ia2c", "seac-q10", "--seeds", "1", "--steps", "200",
            "--jobs", "2", "--out", str(root), "--results", str(results)]
    assert main(args) == 0
    assert progress(Job("lbf-8x8-2p-2f-coop-seac-q10", 0, 200), root) == 200
    tables = (results / "tables.md").read_text()
    assert "| lbf-8x8-2p-2f-coop | SEAC, quantile 10% |" in tables and "| 200 |" in tables
    assert (results / "figures" / "learning_curves.png").is_file(), "training episodes are plotted before any evaluation"


def test_a_seed_started_later_does_not_pull_a_table_cell_back_to_its_step(tmp_path):
    """Seed 0 kept at 2M (greedy 0.4 in its last evaluations), seed 1 restarted on a new
    machine and at 40k: the cell is seed 0's at 2M, marked as one seed of three."""
    preset = "lbf-8x8-2p-2f-coop-ia2c"
    runs = tmp_path / "runs" / f"{preset}-{load_preset(preset).config_hash()}"
    for seed, steps, greedy in ((0, range(200_000, 2_000_001, 200_000), 0.4), (1, range(20_000, 40_001, 20_000), 0.0)):
        (runs / str(seed)).mkdir(parents=True)
        lines = ["env_steps,episode_reward_mean,eval_reward_mean", *(f"{s},0.1,{greedy}" for s in steps)]
        (runs / str(seed) / "metrics.csv").write_text("\n".join(lines) + "\n")
    row = next(line for line in table(tmp_path, ["lbf-8x8-2p-2f-coop"], ["ia2c"], 3).splitlines() if "| IA2C |" in line)
    assert row == "| lbf-8x8-2p-2f-coop | IA2C | 0.40 [1/3 seeds] | 0.10 [1/3 seeds] | 2,000,000 |"


def test_a_report_of_part_of_the_grid_keeps_the_rows_of_runs_kept_before(tmp_path):
    """Kept IA2C metrics on the coop task, then a report of IPPO on another task alone: the
    tables and the status still show the coop run (a grid of one task once overwrote them)."""
    preset = "lbf-8x8-2p-2f-coop-ia2c"
    seed_dir = tmp_path / "results" / "runs" / f"{preset}-{load_preset(preset).config_hash()}" / "0"
    seed_dir.mkdir(parents=True)
    (seed_dir / "metrics.csv").write_text("env_steps,episode_reward_mean,eval_reward_mean\n20000,0.05,0.1\n40000,0.06,0.2\n")
    args = ["reproduce", "seac", "--tasks", "lbf-8x8-2p-2f", "--algos", "ippo", "--seeds", "1",
            "--out", str(tmp_path / "runs"), "--results", str(tmp_path / "results"), "--report-only"]
    assert main(args) == 0
    tables = (tmp_path / "results" / "tables.md").read_text()
    assert "| lbf-8x8-2p-2f-coop | IA2C | 0.15 | 0.06 | 40,000 |" in tables
    assert "| lbf-8x8-2p-2f | IPPO | not run |" in tables, "the chosen task is there too"
    assert "| lbf-10x10-3p-3f |" not in tables, "a task with nothing kept and not chosen stays out"
    status = (tmp_path / "results" / "status.md").read_text()
    assert "| lbf-8x8-2p-2f-coop-ia2c | 0 | 40,000 |" in status and "| lbf-8x8-2p-2f-ippo | 0 | 0 |" in status
    assert "lbf-8x8-2p-2f-ia2c" not in status and "coop-ippo" not in status, "the status lists chosen and kept runs only"
