"""``relayrl reproduce accmer``: the grid, the timing comparison, and the report written from
real (tiny) runs."""

import csv
from pathlib import Path

from relayrl.cli import main
from relayrl.experiment.papers.accmer import PAPER_SAVING, grid, time_figure, time_table
from relayrl.experiment.presets import PRESETS, load_preset


def test_grid_runs_macpo_and_accmer_first_seed_by_seed_and_every_preset_exists():
    jobs = grid(["", "-hard"], None, 2, None)
    assert all(j.preset in PRESETS for j in jobs)
    assert [j.preset for j in jobs[:6]] == [
        "predator-prey-macpo", "predator-prey-accmer", "predator-prey-qmix",
        "predator-prey-hard-macpo", "predator-prey-hard-accmer", "predator-prey-hard-qmix",
    ]
    assert [j.seed for j in jobs] == [0] * 6 + [1] * 6 and {j.steps for j in jobs} == {1_000_000}
    assert [j.preset for j in grid(["-32"], ["accmer", "iql"], 1, 5000)] == ["predator-prey-32-accmer", "predator-prey-32-iql"]


def _write_run(results: Path, preset: str, seed: int, walls: list[float], share: float) -> None:
    run = results / "runs" / f"{preset}-{load_preset(preset).config_hash()}" / str(seed)
    run.mkdir(parents=True)
    with (run / "metrics.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["env_steps", "wall_s", "sample_share", "eval_reward_mean", "episode_reward_mean"])
        writer.writeheader()
        writer.writerows(
            {"env_steps": 10_000 * (i + 1), "wall_s": w, "sample_share": share, "eval_reward_mean": 1.0, "episode_reward_mean": 1.0}
            for i, w in enumerate(walls)
        )


def test_training_time_is_compared_seed_by_seed_at_the_step_both_reached(tmp_path):
    _write_run(tmp_path, "predator-prey-macpo", 0, [100.0, 200.0, 300.0], 0.2)
    _write_run(tmp_path, "predator-prey-accmer", 0, [90.0, 160.0], 0.1)  # 20k steps: compared there
    (line,) = time_table(tmp_path, ("", "-hard")).splitlines()[2:]
    assert line == "| 8 predators, no punishment | 20,000 | 200.00 | 160.00 | 20.00 [1 seed] | 17.0 | 15.00 (5.00) |"
    assert PAPER_SAVING["-32"] == 0.254
    assert time_figure(tmp_path, tmp_path / "time.png", ("", "-hard")) == tmp_path / "time.png"
    assert time_figure(tmp_path, tmp_path / "none.png", ("-hard",)) is None and not (tmp_path / "none.png").exists()


def test_reproduce_accmer_runs_and_reports(tmp_path, capsys):
    root, results = tmp_path / "runs", tmp_path / "results"
    args = ["reproduce", "accmer", "--settings", "32", "--algos", "macpo", "accmer", "--seeds", "1", "--steps", "40",
            "--jobs", "2", "--out", str(root), "--results", str(results)]
    main(args)
    out, err = capsys.readouterr()
    logs = {log.name: log.read_text()[-1500:] for log in (root / "logs").glob("*.log")}
    assert "copied the metrics of 2 run(s)" in out, (err, logs)  # a job that failed says why in its log
    tables = (results / "tables.md").read_text()
    assert "| MAC-PO | not run |" not in tables  # both ran, though too short for a final reward
    assert "32 predators | 40 |" in tables  # the timing row at the step both reached
    assert (results / "figures" / "training_time.png").stat().st_size > 0
    assert (results / "status.md").read_text().count("complete") == 2
