"""Checkpoints: exact resume, corrupt checkpoints detected, Ctrl-C keeps what was written."""

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from relayrl.core.errors import CheckpointError
from relayrl.envs import EnvFactory
from relayrl.envs.corridor import CorridorEnv
from relayrl.experiment import Factories, Run, build_run, build_config
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints, load_checkpoint, load_policies, save_checkpoint
from relayrl.experiment.metrics import read_metrics

TIMING = {"sps", "updates_per_s", "wall_s"}


def _tiny(env: dict, total: int, **extra) -> dict:
    return {
        "preset": "tiny",
        "env": env,
        "total_steps": total,
        "report_interval": 200,
        "checkpoint_interval": 400,
        "keep_checkpoints": 3,
        "eval": {"interval": 400, "episodes": 2},
        "sharing": {"select": "quantile", "window": 50},
        "dqn": {"learning_starts": 100, "buffer_size": 300, "batch_size": 8, "target_update_interval": 150,
                "epsilon_start": 1.0, "epsilon_end": 0.1, "epsilon_steps": 600},
        **extra,
    }


PURSUIT = {"name": "pursuit", "settings": {"x_size": 8, "y_size": 8, "n_evaders": 3, "n_pursuers": 3, "max_cycles": 60}}
CORRIDOR = {"name": "corridor", "settings": {"n_agents": 3, "length": 5, "max_steps": 12}, "num_envs": 2}


def _rows(run_dir: Path) -> list[dict]:
    with (run_dir / "metrics.csv").open() as handle:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(handle)]


def _learner(run: Run):
    """The learner of the run's one group."""
    (learner,) = run.learners.values()
    return learner


def _train(config: dict, run_dir: Path) -> Run:
    run = build_run(build_config(config), run_dir, verbose=False)
    run.train()
    run.close()
    return run


@pytest.mark.parametrize("env", [PURSUIT, CORRIDOR], ids=["pursuit", "corridor"])
def test_train_n_equals_train_k_then_resume(tmp_path, env):
    total, k = 1200, 400
    straight = _train(_tiny(env, total), tmp_path / "a")
    _train(_tiny(env, k), tmp_path / "b")
    resumed = _train(_tiny(env, total), tmp_path / "b")  # same config hash: resumes at k
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    assert len(_rows(tmp_path / "a")) == total // 200
    for p, q in zip(_learner(straight).algorithm.online.parameters(), _learner(resumed).algorithm.online.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    a, b = _learner(straight).replay.state_dict(), _learner(resumed).replay.state_dict()
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key])
    for name in a["data"]:
        np.testing.assert_array_equal(np.stack(a["data"][name]), np.stack(b["data"][name]))


def test_a_resume_may_report_at_another_interval_and_learns_the_same(tmp_path):
    """Reports are tallies of what happened since the last one: a run resumed with another
    report_interval writes rows at the new cadence and ends with the networks, replay and
    episodes of the run that kept its interval."""
    total, k = 1200, 400
    straight = _train(_tiny(PURSUIT, total), tmp_path / "a")
    _train(_tiny(PURSUIT, k), tmp_path / "b")
    resumed = _train({**_tiny(PURSUIT, total), "report_interval": 400}, tmp_path / "b")
    # the report already due at 600 stands, then every 400, and the budget's end
    assert [int(r["env_steps"]) for r in _rows(tmp_path / "b")] == [200, 400, 600, 1000, 1200]
    for p, q in zip(_learner(straight).algorithm.online.parameters(), _learner(resumed).algorithm.online.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    last = {k: v for k, v in _rows(tmp_path / "a")[-1].items() if k in ("env_steps", "agent_steps", "updates", "episodes_total", "eval_reward_mean")}
    assert last == {k: v for k, v in _rows(tmp_path / "b")[-1].items() if k in last}
    # the run's directory keeps its name: training its first config on finds and resumes it
    assert _train(_tiny(PURSUIT, 1400), tmp_path / "b").counters.env_steps == 1400


def test_corrupt_checkpoint_is_detected(tmp_path):
    _train(_tiny(CORRIDOR, 400), tmp_path)
    last = list_checkpoints(tmp_path / "checkpoints")[-1]
    data = bytearray((last / "state.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (last / "state.npz").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(last)
    with pytest.raises(CheckpointError, match="corrupt"):
        build_run(build_config(_tiny(CORRIDOR, 800)), tmp_path, verbose=False).train()


def test_a_checkpoint_of_another_revision_is_refused_naming_it(tmp_path):
    """A checkpoint without an entry this relayrl resumes from (the reporter's tally, here)
    is refused before training, pointing at provenance.yaml, which names the revision."""
    _train(_tiny(CORRIDOR, 400), tmp_path)
    last = list_checkpoints(tmp_path / "checkpoints")[-1]
    state = load_checkpoint(last)
    del state["tally"]
    save_checkpoint(tmp_path / "checkpoints", 500, state, 3, load_policies(last))
    with pytest.raises(CheckpointError, match=r"step_0+500 has no entry 'tally': another relayrl revision wrote it .*provenance\.yaml"):
        build_run(build_config(_tiny(CORRIDOR, 800)), tmp_path, verbose=False).train()


def test_a_copy_set_aside_in_the_checkpoints_folder_is_not_a_checkpoint(tmp_path):
    """``step_0000000400.bak`` (a user's copy) is neither resumed from nor taken as newest."""
    import shutil

    _train(_tiny(CORRIDOR, 400), tmp_path)
    (last,) = list_checkpoints(tmp_path / "checkpoints")[-1:]
    shutil.copytree(last, last.with_name(last.name + ".bak"))
    assert list_checkpoints(tmp_path / "checkpoints")[-1] == last
    resumed = _train(_tiny(CORRIDOR, 800), tmp_path)
    assert resumed.counters.env_steps == 800 and list_checkpoints(tmp_path / "checkpoints")[-1].name == "step_0000000800"


class InterruptingCorridor(CorridorEnv):
    """Raises KeyboardInterrupt (as Ctrl-C would) after a number of steps."""

    steps_before_interrupt = 500

    def step(self, actions):
        InterruptingCorridor.steps_before_interrupt -= 1
        if InterruptingCorridor.steps_before_interrupt < 0:
            raise KeyboardInterrupt
        return super().step(actions)


def test_ctrl_c_keeps_last_checkpoint_and_metrics(tmp_path):
    config = _tiny({**CORRIDOR, "num_envs": 1}, 2000)
    factory = EnvFactory(InterruptingCorridor, CORRIDOR["settings"])
    run = build_run(build_config(config), tmp_path, Factories(env=factory), verbose=False)
    with pytest.raises(KeyboardInterrupt):
        run.train()
    rows = _rows(tmp_path)
    assert [int(r["env_steps"]) for r in rows] == [200, 400]
    checkpoints = list_checkpoints(tmp_path / "checkpoints")
    assert [c.name for c in checkpoints] == ["step_0000000400"]
    assert load_checkpoint(checkpoints[-1])["counters"]["env_steps"] == 400
    InterruptingCorridor.steps_before_interrupt = 10**9
    resumed = build_run(build_config(config), tmp_path, Factories(env=factory), verbose=False)
    resumed.train()
    assert [int(r["env_steps"]) for r in _rows(tmp_path)] == list(range(200, 2001, 200))


def test_pettingzoo_env_state_resumes_on_the_vectorised_pursuit(tmp_path, capsys):
    """A run saved with PettingZoo's copies continues on the vectorised pursuit (same
    dynamics): learners and replay load, in-flight episodes restart."""
    pz = _tiny({**PURSUIT, "name": "pursuit-pz"}, 400)
    saved = _train(pz, tmp_path / "pz").state_dict()
    fast = build_run(build_config(_tiny(PURSUIT, 800)), None, verbose=False)
    fast.load_state_dict(saved)
    assert "episodes restart" in capsys.readouterr().err
    assert fast.counters.env_steps == 400 and fast.collector.rollout.observed[0].obs.shape == (1, 3, 7, 7, 3)
    fast.iteration()
    for p, q in zip(saved["policies"]["pursuer"]["algorithm"]["online"].values(), _learner(fast).algorithm.state_dict()["online"].values()):
        assert p.shape == q.shape


def test_a_run_directory_is_trained_by_one_process_at_a_time(tmp_path):
    from relayrl.core.errors import RelayRLError
    from relayrl.experiment.run_lock import RunLock, is_locked

    holder = RunLock(tmp_path)
    holder.acquire()
    assert is_locked(tmp_path)
    with pytest.raises(RelayRLError, match="is being trained by pid"):
        build_run(build_config(_tiny(CORRIDOR, 200)), tmp_path, verbose=False).train()
    holder.release()
    assert not is_locked(tmp_path)
    build_run(build_config(_tiny(CORRIDOR, 200)), tmp_path, verbose=False).train()
    assert not is_locked(tmp_path)


def test_sigterm_saves_a_checkpoint_where_it_stops_and_the_run_resumes(tmp_path):
    cmd = [sys.executable, "-m", "relayrl.cli", "train", "pursuit-quickstart", "total_steps=200000",
           "checkpoint_interval=200000", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600  # a guard against a hang; a loaded 2-core machine needs minutes
    while time.time() < deadline and not list(tmp_path.glob("*/0/metrics.csv")):
        time.sleep(0.5)
    (metrics,) = list(tmp_path.glob("*/0/metrics.csv"))
    while time.time() < deadline and len(metrics.read_text().splitlines()) < 3:  # two reports written
        time.sleep(0.5)
    reported = read_metrics(metrics.parent)
    assert len(reported) >= 2, "the run wrote fewer than two reports in 10 minutes"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "stopped by SIGTERM" in err
    (checkpoint,) = list_checkpoints(metrics.parent / "checkpoints")
    stopped_at = checkpoint_steps(checkpoint)
    assert reported[-1]["env_steps"] <= stopped_at < 200_000  # where it stopped, not a checkpoint_interval multiple
    resumed = build_run(build_config(load_checkpoint(checkpoint)["config"]), metrics.parent, verbose=False)
    assert resumed.run_dir.resume(resumed.load_state_dict)
    assert resumed.counters.env_steps == stopped_at


def test_resume_of_a_complete_or_locked_run_says_so_before_building_anything(tmp_path, capsys):
    from relayrl.cli import main
    from relayrl.experiment.run_lock import RunLock

    _train(_tiny(CORRIDOR, 400), tmp_path)
    assert main(["resume", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path} is already complete: its checkpoint is at 400 env steps, total_steps=400; nothing to do"
    assert main(["resume", str(tmp_path), "eval.episodes=50"]) == 2  # a change no resume may make is said before "complete"
    assert "was trained with other settings (eval.episodes: 2 -> 50)" in capsys.readouterr().err
    holder = RunLock(tmp_path)
    holder.acquire()
    try:
        assert main(["resume", str(tmp_path), "total_steps=800"]) != 0
    finally:
        holder.release()
    out, err = capsys.readouterr()
    assert "is being trained by pid" in err and out == ""


@pytest.mark.parametrize("damage", ["empty metrics", "garbage row", "corrupt config"])
def test_a_run_directorys_damaged_files_are_rebuilt_or_named(tmp_path, capsys, damage):
    """An empty metrics.csv is written anew with its header; a garbage row and an unreadable
    config.yaml are named with what to do, before anything is trained."""
    from relayrl.cli import main

    _train(_tiny(CORRIDOR, 400), tmp_path)
    metrics = tmp_path / "metrics.csv"
    if damage == "empty metrics":
        metrics.write_text("")
        assert main(["resume", str(tmp_path), "total_steps=800"]) == 0
        rows = read_metrics(tmp_path)
        assert metrics.read_text().startswith("env_steps,") and [r["env_steps"] for r in rows] == [600, 800]
        return
    if damage == "garbage row":
        metrics.write_text(metrics.read_text() + "garbage,,,\n")
        expected = r"metrics\.csv line 4 is not a metrics row \(env_steps 'garbage'\): remove that line"
    else:
        (tmp_path / "config.yaml").write_text("env: {name: [\n")
        expected = r"config\.yaml is not readable YAML .*restore it"
    assert main(["resume", str(tmp_path), "total_steps=800"]) == 2
    import re

    assert re.search(expected, capsys.readouterr().err)
