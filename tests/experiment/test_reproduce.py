"""``relayrl reproduce super``: the grid in priority order, skip and resume by config hash,
and the report with the paper's numbers."""

import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

from relayrl.cli import main
from relayrl.experiment.checkpoint import list_checkpoints
from relayrl.experiment.grid import Job, command, find_run, progress, run_grid, with_dependencies
from relayrl.experiment.papers.common import table_cell
from relayrl.experiment.papers.super import PAPER_TABLE1, grid, snapshot
from relayrl.experiment.presets import PRESETS, load_preset
from relayrl.experiment.run_lock import is_locked


def test_grid_runs_the_issue_priorities_first_and_every_preset_exists():
    jobs = grid(["pursuit", "battle", "adversarial-pursuit"], None, 3, None)
    assert all(j.preset in PRESETS for j in jobs)
    assert [j.preset for j in jobs[:6]] == ["pursuit-ddqn"] * 3 + ["pursuit-super-quantile"] * 3
    assert {j.preset for j in jobs[6:18]} == {f"{d}-{a}" for d in ("battle", "adversarial-pursuit") for a in ("ddqn", "super-quantile")}
    assert {j.steps for j in jobs[:6]} == {800_000} and {j.steps for j in jobs[6:18]} == {300_000}
    sweep = [j for j in jobs if "-bw" in j.preset]
    assert len(sweep) == 3 * 5 * 3 and {j.steps for j in sweep} == {250_000}  # bandwidth 0.1 is the table run
    ends = {(j.preset, j.steps) for j in jobs if j.steps == 250_000 and "-bw" not in j.preset}
    assert {("pursuit-ddqn", 250_000), ("pursuit-shareall", 250_000)} <= ends  # the sweep's none / all ends
    others = {(j.preset, j.steps) for j in jobs if j.preset.endswith(("-seac", "-maddpg"))}
    table_steps = {"pursuit": 800_000, "battle": 300_000, "adversarial-pursuit": 300_000}
    assert others == {(f"{d}-{a}", n) for d, n in table_steps.items() for a in ("seac", "maddpg")}, "Table 1's other baselines, every cell"


def test_pretraining_runs_come_first_and_once():
    jobs = with_dependencies(grid(["battle"], ["ddqn", "super-quantile"], 2, None))
    assert jobs[0] == Job("battle-pretrain", 0, 300_000)
    assert [j.preset for j in jobs].count("battle-pretrain") == 1


def test_the_default_bandwidth_sweep_point_is_the_table_run_at_its_longer_budget():
    jobs = grid(["pursuit"], ["super-quantile", "super-quantile-bw0.01"], 1, None)
    assert [(j.preset, j.steps) for j in jobs] == [
        ("pursuit-super-quantile", 800_000),
        ("pursuit-super-quantile-bw0.01", 250_000),
        ("pursuit-super-quantile", 250_000),
    ]
    merged = with_dependencies(jobs)
    assert [(j.preset, j.steps) for j in merged] == [("pursuit-super-quantile", 800_000), ("pursuit-super-quantile-bw0.01", 250_000)]


def test_a_run_is_found_by_its_config_hash(tmp_path):
    assert main(["train", "pursuit-super-quantile", "total_steps=8", "--seed", "0", "--out", str(tmp_path)]) == 0
    job = Job("pursuit-super-quantile", 0, 8)
    assert find_run(job.config(), tmp_path).name == "0"
    assert find_run(Job("pursuit-super-quantile", 1, 8).config(), tmp_path) is None
    assert progress(job, tmp_path) == 8


def test_reproduce_runs_skips_and_reports(tmp_path, capsys):
    root, results = tmp_path / "runs", tmp_path / "results"
    args = ["reproduce", "super", "--domains", "pursuit", "--algos", "ddqn", "--seeds", "2", "--steps", "40",
            "--jobs", "2", "--out", str(root), "--results", str(results)]
    assert main(args) == 0
    assert all(progress(Job("pursuit-ddqn", s, 40), root) == 40 for s in (0, 1))
    copies = sorted(p.relative_to(results) for p in (results / "runs").glob("*/*/metrics.csv"))
    assert [p.parent.name for p in copies] == ["0", "1"]
    table = (results / "table1.md").read_text()
    assert "181.43 (4.16)" in table and "not run" in table and "no preset" not in table
    capsys.readouterr()
    assert main(args) == 0  # everything complete: nothing runs again
    assert capsys.readouterr().out.count("complete: pursuit-ddqn") == 2


def test_interrupted_job_resumes_to_the_longer_budget(tmp_path):
    status = run_grid([Job("pursuit-ddqn", 0, 8)], tmp_path, 1, say=lambda _: None)
    assert list(status.values()) == ["complete"]
    status = run_grid([Job("pursuit-ddqn", 0, 16)], tmp_path, 1, say=lambda _: None)
    assert list(status.values()) == ["complete"] and progress(Job("pursuit-ddqn", 0, 16), tmp_path) == 16
    assert len(list(tmp_path.glob("pursuit-ddqn-*"))) == 1


def test_sigterm_stops_a_background_grid_and_its_runs_keep_a_checkpoint(tmp_path):
    # A grid started with nohup ... & ignores SIGINT, so SIGTERM must stop it cleanly.
    job = Job("pursuit-quickstart", 0, 200_000)
    script = (
        "from pathlib import Path; from relayrl.experiment.grid import Job, run_grid; "
        f"run_grid([Job('pursuit-quickstart', 0, 200_000)], Path({str(tmp_path)!r}), 1)"
    )
    grid_process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.time() + 300
    while time.time() < deadline and not list(tmp_path.glob("*/0/metrics.csv")):
        time.sleep(0.5)
    (metrics,) = list(tmp_path.glob("*/0/metrics.csv"))
    while time.time() < deadline and len(metrics.read_text().splitlines()) < 2:  # the run is training
        time.sleep(0.5)
    grid_process.send_signal(signal.SIGTERM)
    _, err = grid_process.communicate(timeout=120)
    assert grid_process.returncode != 0 and "KeyboardInterrupt" in err
    assert not is_locked(metrics.parent)  # the run's process has exited
    assert "stopped by SIGTERM" in (tmp_path / "logs" / "pursuit-quickstart-s0.log").read_text()
    assert list_checkpoints(metrics.parent / "checkpoints") and progress(job, tmp_path) < 200_000


def test_table_cells_mark_partial_and_unfinished_seeds():
    runs = [[{"env_steps": 1000.0}, {"env_steps": 250_000.0}], [{"env_steps": 120_000.0}]]
    assert table_cell([1.0, 3.0], runs, seeds=2) == "2.00 (1.00)"
    assert table_cell([1.0], runs, seeds=3) == "1.00 [1/3 seeds]"
    assert table_cell([], runs, seeds=3) == "running (2 seeds at 120,000-250,000 steps)"
    assert table_cell([], runs[1:], seeds=3) == "running (1 seed at 120,000 steps)"
    assert table_cell([], [[]], seeds=3) == "started"
    assert table_cell([], [], seeds=3) == "not run"


def _write_metrics(results, preset: str, seed: int, rows: list[tuple[int, float, float]]) -> None:
    run = results / "runs" / f"{preset}-{load_preset(preset).config_hash()}" / str(seed)
    run.mkdir(parents=True)
    lines = ["env_steps,episode_reward_mean,eval_reward_mean"] + [f"{s},{r},{e}" for s, r, e in rows]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")


def test_progress_rows_at_the_common_bin_and_at_the_leading_seeds_bin(tmp_path):
    nan = float("nan")
    _write_metrics(tmp_path, "pursuit-ddqn", 0, [(8000, -300.0, nan), (16000, -200.0, -250.0), (24000, -100.0, nan)])
    _write_metrics(tmp_path, "pursuit-ddqn", 1, [(8000, -320.0, nan), (16000, -220.0, -150.0)])
    _write_metrics(tmp_path, "pursuit-super-quantile", 0, [(8000, -280.0, nan)])
    rows = snapshot(tmp_path).splitlines()[2:]
    assert rows == [
        "| pursuit-ddqn | 2 | 16,000 | -210.00 (10.00) | -200.00 (50.00) |",
        "| pursuit-ddqn | 1 | 24,000 | -100.00 | -250.00 |",
        "| pursuit-super-quantile | 1 | 8,000 | -280.00 | - |",
    ]


def test_paper_table_is_the_specs():
    assert PAPER_TABLE1["super-quantile"]["pursuit"] == (454.56, 5.89)
    assert PAPER_TABLE1["ddqn"]["adversarial-pursuit"] == (-719.78, 66.82)


def test_unknown_domain_is_a_clear_error(capsys):
    assert main(["reproduce", "super", "--domains", "pong"]) == 2
    assert "choose from pursuit, battle, adversarial-pursuit" in capsys.readouterr().err


def test_ray_backend_runs_a_job(tmp_path):
    pytest.importorskip("ray")
    status = run_grid([Job("pursuit-ddqn", 0, 8)], tmp_path, 1, backend="ray", say=lambda _: None)
    assert list(status.values()) == ["complete"]


def test_gaussian_scale_switch_study_on_a_trained_run(tmp_path):
    from relayrl.experiment import build_run, build_config
    from relayrl.experiment.papers.super import figures, scale_switch_study

    config = build_config({
        "preset": "scale", "total_steps": 600, "checkpoint_interval": 600, "eval": {"interval": 0},
        "env": {"name": "pursuit", "settings": {"x_size": 8, "y_size": 8, "n_evaders": 3, "n_pursuers": 2}},
        "dqn": {"learning_starts": 100, "buffer_size": 1000},
    })
    build_run(config, tmp_path / "run", verbose=False).train()
    out = scale_switch_study(tmp_path / "run", tmp_path / "results", window=100)
    rows = out.read_text().splitlines()[1:]
    assert len(rows) == 3 * 6
    realised = {(r.split(",")[0], float(r.split(",")[1])): float(r.split(",")[2]) for r in rows}
    assert all(0.0 <= v <= 1.0 for v in realised.values())
    assert realised[("quantile", 1.0)] == 1.0 and realised[("gaussian (std)", 1.0)] == 1.0
    assert abs(realised[("quantile", 0.1)] - 0.1) < 0.05  # the quantile rule meets its target
    assert (tmp_path / "results" / "gaussian_scale_switch_bandwidth.png") in figures(tmp_path / "results")


def test_status_table_lists_pretraining_and_progress_from_checkpoints_or_kept_metrics(tmp_path):
    from relayrl.experiment.grid import collect, status_table

    jobs = [Job("pursuit-ddqn", 0, 8), Job("battle-ddqn", 0, 300_000)]
    run_grid(jobs[:1], tmp_path / "runs", 1, say=lambda _: None)
    table = status_table(jobs, tmp_path / "runs", tmp_path / "results")
    assert "| pursuit-ddqn | 0 | 8 | 8 | complete |" in table
    assert table.index("battle-pretrain") < table.index("battle-ddqn")
    assert "| battle-ddqn | 0 | 0 | 300,000 | not started |" in table
    collect(jobs[:1], tmp_path / "runs", tmp_path / "results")
    shutil.rmtree(tmp_path / "runs")  # the run directories are gone (another machine); their metrics were kept
    assert "| pursuit-ddqn | 0 | 8 | 8 | complete |" in status_table(jobs, tmp_path / "runs", tmp_path / "results")


def test_kept_metrics_complete_a_job_after_its_directory_is_lost_and_a_shorter_restart_does_not_overwrite_them(tmp_path):
    from relayrl.experiment.grid import collect, kept_progress, status_table

    root, results = tmp_path / "runs", tmp_path / "results"
    job = Job("pursuit-ddqn", 0, 16)
    run_grid([job], root, 1, say=lambda _: None)
    collect([job], root, results)
    shutil.rmtree(root)  # another machine: the run directory is gone, its metrics were kept
    said: list[str] = []
    assert run_grid([job], root, 1, say=said.append, results=results) == {job: "complete"}
    assert said == [f"complete (kept metrics): {job.name}"] and find_run(job.config(), root) is None
    not_here = "| pursuit-ddqn | 0 | 16 | 32 | metrics kept, run directory not on this machine: trains again from 0 |"
    assert not_here in status_table([Job("pursuit-ddqn", 0, 32)], root, results)
    run_grid([Job("pursuit-ddqn", 0, 8)], root, 1, say=lambda _: None)  # a restart that has not caught up
    collect([job], root, results)
    assert kept_progress(job, results) == 16
    assert "| pursuit-ddqn | 0 | 16 | 32 | restarted from 0 (8 in this run) |" in status_table([Job("pursuit-ddqn", 0, 32)], root, results)
    # a run whose reports went on past its last checkpoint (as a training one's do) is the run its metrics were kept from
    run = find_run(job.config(), root)
    collect([job], root, results)
    assert kept_progress(job, results) == 16  # the restart's 8 do not overwrite the 16 kept
    shutil.rmtree(list_checkpoints(run / "checkpoints")[-1])
    shutil.copy(results / "runs" / run.parent.name / "0" / "metrics.csv", run / "metrics.csv")
    assert "| pursuit-ddqn | 0 | 16 | 32 | started |" in status_table([Job("pursuit-ddqn", 0, 32)], root, results)


def test_a_pretraining_run_kept_only_as_metrics_trains_again_when_a_job_needs_its_checkpoint(tmp_path):
    from relayrl.experiment.grid import complete_by_kept_metrics

    root, results = tmp_path / "runs", tmp_path / "results"
    job = Job("battle-ddqn", 0, 300_000)
    (pretrain,) = job.dependencies()
    config = pretrain.config()
    kept = results / "runs" / f"{config.preset}-{config.config_hash()}" / str(pretrain.seed)
    kept.mkdir(parents=True)
    (kept / "metrics.csv").write_text(f"env_steps,reward_mean\n{pretrain.steps},1.0\n")
    assert complete_by_kept_metrics([job], root, results) == []
    assert complete_by_kept_metrics([pretrain], root, results) == [pretrain]


def _tiny_opponent_presets(monkeypatch):
    """A 2 v 2 Battle pretraining of 40 env steps and a run against its frozen red: the grid's
    tier 2 in miniature (registered for this test only)."""
    from relayrl.experiment.presets.common import merge
    from relayrl.experiment.presets.super import DDQN_OPPONENT

    small = {
        "env": {"name": "battle", "settings": {"map_size": 12, "max_cycles": 30}},
        "dqn": {"learning_starts": 8, "batch_size": 4, "fragment_length": 4, "buffer_size": 200},
        "model": {"conv_channels": [4], "hiddens": [8], "head_hidden": 8},
        "report_group": "blue", "report_interval": 20, "checkpoint_interval": 40, "eval": {"interval": 0},
    }
    monkeypatch.setitem(PRESETS, "tiny-pretrain", ("both teams DDQN", merge(small, {"total_steps": 40, "policies": {"red": DDQN_OPPONENT}})))
    frozen_red = {"kind": "frozen", "pretrained": "tiny-pretrain", "dqn": DDQN_OPPONENT["dqn"]}
    monkeypatch.setitem(PRESETS, "tiny-vs-frozen", ("blue against the frozen red", merge(small, {"total_steps": 20, "policies": {"red": frozen_red}})))
    return Job("tiny-vs-frozen", 0, 20), Job("tiny-pretrain", 0, 40)


def _same_tree(a, b) -> bool:
    import torch

    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_tree(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    return a == b


def test_a_complete_pretraining_keeps_its_frozen_opponents_and_another_machine_restores_them(tmp_path, monkeypatch, capsys):
    import yaml

    from relayrl.experiment.checkpoint import load_policies
    from relayrl.experiment.grid import KEPT_POLICIES, collect, keep_opponents, kept_run, restore_opponents, status_table

    job, pretrain = _tiny_opponent_presets(monkeypatch)
    assert job.opponents() == {pretrain: ["red"]}
    root, results = tmp_path / "runs", tmp_path / "results"
    assert main(["train", "tiny-pretrain", "--out", str(root)]) == 0
    (trained,) = list_checkpoints(find_run(pretrain.config(), root) / "checkpoints")[-1:]
    collect([job], root, results)
    (kept,) = list_checkpoints(kept_run(pretrain, results) / KEPT_POLICIES)
    assert kept.name == trained.name == "step_0000000040"
    original, saved = load_policies(trained), load_policies(kept)
    assert set(original) == {"red", "blue"} and set(saved) == {"red"}  # only what the frozen opponents load
    assert _same_tree(original["red"], saved["red"])
    assert keep_opponents([job], root, results) == []  # kept already: not written again
    assert "| tiny-pretrain | 0 | 40 | 40 | complete, opponents kept (red) |" in status_table([job], root, results)

    shutil.rmtree(root)  # another machine: the run directory (and its replay) is gone
    said: list[str] = []
    restore_opponents([job], root, results, said.append)
    assert said and said[0].startswith("restored: tiny-pretrain seed 0 @ 40") and progress(pretrain, root) == 40
    assert main(["train", "tiny-vs-frozen", "--out", str(root)]) == 0  # trains against the kept red, no pretraining
    (entry,) = yaml.safe_load((find_run(job.config(), root) / "provenance.yaml").read_text())
    assert entry["policies_from"]["red"].endswith(f"checkpoints/{kept.name}")
    from relayrl.experiment import build_run

    elsewhere = build_run(job.config(), str(tmp_path / "script" / "run" / "0"), verbose=False, runs_root=str(root))  # a script's run, outside the runs root
    assert elsewhere.policies["red"].source == entry["policies_from"]["red"]
    elsewhere.close()
    capsys.readouterr()
    assert main(["resume", str(find_run(pretrain.config(), root)), "total_steps=80"]) == 2  # policies only: refused, named
    assert "holds policies' networks only" in capsys.readouterr().err
    assert keep_opponents([job], root, results) == []  # the restored copy is not kept over its source

    other = tmp_path / "other"  # a machine where the pretraining restarted from 0 before the kept policies came
    assert main(["train", "tiny-pretrain", "total_steps=20", "--out", str(other)]) == 0
    said.clear()
    restore_opponents([job], other, results, said.append)
    assert said[0].startswith("not restored: tiny-pretrain seed 0 @ 40") and "delete that run directory" in said[0]
    assert progress(pretrain, other) == 20


def test_threads_reach_each_run_and_its_resume(tmp_path):
    root, results = tmp_path / "runs", tmp_path / "results"
    args = ["reproduce", "super", "--domains", "pursuit", "--algos", "ddqn", "--seeds", "1", "--steps", "8",
            "--jobs", "1", "--threads", "2", "--out", str(root), "--results", str(results)]
    assert main(args) == 0
    (config,) = root.glob("pursuit-ddqn-*/0/config.yaml")
    assert yaml.safe_load(config.read_text())["torch_threads"] == 2
    resume = command(Job("pursuit-ddqn", 0, 16), root, threads=2)
    assert resume[3] == "resume" and "torch_threads=2" in resume  # a resume may change the threads
    assert run_grid([Job("pursuit-ddqn", 0, 16)], root, 1, say=lambda _: None, threads=2) == {Job("pursuit-ddqn", 0, 16): "complete"}
    back = command(Job("pursuit-ddqn", 0, 24), root)  # --threads 1 after a run started on 2
    assert back[3] == "resume" and "torch_threads=1" in back
    assert run_grid([Job("pursuit-ddqn", 0, 24)], root, 1, say=lambda _: None) == {Job("pursuit-ddqn", 0, 24): "complete"}
    assert yaml.safe_load(config.read_text())["torch_threads"] == 1


@pytest.mark.parametrize("losses, drawn", [((0.0, 0.0, 0.0), False), ((0.0, 0.01, 3.5), True)])
def test_the_td_loss_figure_draws_the_sharing_teams_loss_once_updates_began(tmp_path, losses, drawn):
    from relayrl.experiment.papers.super import figures

    seed = tmp_path / "runs" / f"battle-ddqn-{load_preset('battle-ddqn').config_hash()}" / "0"
    seed.mkdir(parents=True)
    rows = [f"{step},{loss},{loss / 2},-1.0,nan" for step, loss in zip((6000, 12000, 18000), losses)]
    (seed / "metrics.csv").write_text("env_steps,td_loss/blue,td_loss/red,episode_reward_mean,eval_reward_mean\n" + "\n".join(rows) + "\n")
    assert ((tmp_path / "td_loss.png") in figures(tmp_path)) is drawn
    assert (tmp_path / "td_loss.png").is_file() is drawn
