"""Bad input fails with the key path or the cause, the bad value and the fix, before training
wherever that can be known, and loses nothing: checkpoints and metrics written so far stay."""

import csv
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from faulty_env import faulty_factory
from relayrl.cli import main
from relayrl.core.errors import ConfigError, EnvError, NonFiniteError
from relayrl.experiment import Factories, build_run, build_config
from relayrl.experiment.checkpoint import list_checkpoints, load_policies
from tiny_runs import TINY_PURSUIT

TINY = [*TINY_PURSUIT, "eval.interval=0"]
CORRIDOR = {"name": "corridor", "settings": {"n_agents": 3, "length": 5, "max_steps": 12}}


def _corridor(total: int = 400, **extra) -> dict:
    return {
        "preset": "faulty",
        "env": CORRIDOR,
        "total_steps": total,
        "report_interval": 100,
        "checkpoint_interval": 200,
        "eval": {"interval": 0},
        "dqn": {"learning_starts": 50, "buffer_size": 500, "batch_size": 8, "epsilon_steps": 300},
        **extra,
    }


BAD_CONFIGS = [
    (["--seed", "-1"], ["seed", "-1", "greater than or equal to 0"]),
    (["device=banana"], ["device", "banana", "use auto, cpu, cuda or cuda:N"]),
    (["model.hiddens=[0]"], ["model.hiddens.0", "greater than or equal to 1", "got 0"]),
    (["model.hiddens=[-5]"], ["model.hiddens.0", "got -5"]),
    (["dqn.lr=inf"], ["dqn.lr", "finite", "inf"]),
    (["dqn.lr=nan"], ["dqn.lr", "finite"]),
    (["dqn.lr=[1"], ["dqn.lr=[1", "cannot be read"]),
    (["dqn.batch_size=5000"], ["batch_size 5000 is larger than buffer_size 1000", "lower dqn.batch_size"]),
    (["model.kernel_size=9"], ["model.kernel_size=9", "7x7", "model.kernel_size <= 3"]),
    (["dqn.buffer_size=1000000000"], ["the replays need", "GB", "memory available", "lower dqn.buffer_size"]),
    # a short run fills few rows, but the buffers are allocated whole
    (["dqn.buffer_size=100000000", "dqn.prioritized=false"], ["the replays allocate 242.4 GB", "more than this machine's", "lower dqn.buffer_size"]),
    # a run trains whole fragments: this budget would have trained 1,000 env steps and shown 100%
    (["backend.fragment_steps=1000"], ["total_steps=400 is less than one fragment", "1,000 steps of each of 1 env copies", "at least 1,000"]),
]


@pytest.mark.parametrize("overrides,expected", BAD_CONFIGS, ids=[" ".join(c[0]) for c in BAD_CONFIGS])
def test_a_bad_config_fails_before_training_and_creates_nothing(tmp_path, capsys, overrides, expected):
    assert main(["train", "pursuit-ddqn", *TINY, *overrides, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for fragment in expected:
        assert fragment in err
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
@pytest.mark.parametrize(("section", "setting", "expected"), [
    ({"algo": "matd3"}, {"initial_alpha": 0.05}, "centralised: initial_alpha is read by masac only, not by algo=matd3"),
    ({"algo": "masac"}, {"policy_delay": 3}, "centralised: policy_delay is read by matd3 only, not by algo=masac"),
    ({"algo": "masac"}, {"exploration_noise": 0.3}, "centralised: exploration_noise is read by maddpg and matd3 only"),
])
def test_a_key_the_algorithm_ignores_is_refused_and_a_saved_config_still_loads(section, setting, expected):
    base = {"env": {"name": "simple-spread", "settings": {"continuous_actions": True}}, "total_steps": 1000}
    with pytest.raises(ConfigError, match=expected):
        build_config({**base, "centralised": {**section, **setting}})
    # the saved config of a run holds every key, the ignored ones at their defaults
    saved = build_config({**base, "centralised": section}).model_dump(mode="json")
    assert build_config(saved).centralised == build_config({**base, "centralised": section}).centralised


def test_on_policy_and_td3_keys_of_other_algorithms_are_refused():
    with pytest.raises(ConfigError, match="on_policy: seac_coef is read by seac only, not by algo=ppo"):
        build_config({"env": {"name": "simple-spread"}, "on_policy": {"algo": "ppo", "seac_coef": 0.5}})
    with pytest.raises(ConfigError, match="actor_critic: policy_delay is read by td3 only, not by algo=ddpg"):
        build_config({"env": {"name": "simple-spread", "settings": {"continuous_actions": True}}, "actor_critic": {"algo": "ddpg", "policy_delay": 4}})


def test_cuda_on_a_cpu_only_torch_names_the_fix(tmp_path, capsys):
    assert main(["train", "pursuit-quickstart", "device=cuda", "--out", str(tmp_path)]) == 2
    assert "no CUDA device is available" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_replay_size_is_printed_before_allocation(tmp_path, capsys):
    assert main(["train", "pursuit-quickstart", *TINY, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # 8 pursuers x 1000 rows x (2 x 7x7x3 uint8 + action, reward, discount) with a priority tree
    assert "replay memory 2.6 MB (pursuer: 8 x 1,000 x 303 B)" in out and "a checkpoint holds the filled rows" in out


def test_a_checkpoint_holds_the_filled_rows_of_the_replay_not_its_capacity(tmp_path):
    small = _corridor(200, dqn={"learning_starts": 50, "buffer_size": 500, "batch_size": 8})
    large = _corridor(200, dqn={"learning_starts": 50, "buffer_size": 50_000, "batch_size": 8})
    sizes = []
    for name, config in (("small", small), ("large", large)):
        run = build_run(build_config(config), tmp_path / name, verbose=False)
        run.train()
        run.close()
        (checkpoint,) = list_checkpoints(tmp_path / name / "checkpoints")
        sizes.append(sum(f.stat().st_size for f in checkpoint.glob("state.*")))
    # 200 rows per agent in both; the large replay's priority tree adds about 17 B per slot
    assert sizes[1] < sizes[0] + 3 * 50_000 * 20


# ---------------------------------------------------------------- resume


def _trained_run(tmp_path: Path) -> Path:
    assert main(["train", "pursuit-quickstart", *TINY, "--out", str(tmp_path)]) == 0
    (run_dir,) = [p.parent for p in tmp_path.glob("*/*/config.yaml")]
    return run_dir


@pytest.mark.parametrize("override", ["dqn.lr=0.5", "dqn.buffer_size=500", "env.settings.n_pursuers=4"])
def test_a_resume_refuses_a_change_of_what_is_learned(tmp_path, capsys, override):
    run_dir = _trained_run(tmp_path)
    before = {p: p.read_bytes() for p in (run_dir / "config.yaml", run_dir / "metrics.csv")}
    capsys.readouterr()
    assert main(["resume", str(run_dir), "total_steps=600", override]) == 2
    err = capsys.readouterr().err
    key, value = override.split("=")
    assert key in err and value in err and "A resume may change only" in err and "total_steps" in err
    assert "relayrl train pursuit-quickstart KEY=VALUE" in err
    assert all(p.read_bytes() == content for p, content in before.items())
    assert [c.name for c in list_checkpoints(run_dir / "checkpoints")] == ["step_0000000200", "step_0000000400"]


def test_a_resume_records_the_runtime_settings_it_changes(tmp_path):
    run_dir = _trained_run(tmp_path)
    assert main(["resume", str(run_dir), "total_steps=600", "keep_checkpoints=1"]) == 0
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["total_steps"] == 600 and config["keep_checkpoints"] == 1
    last = yaml.safe_load((run_dir / "provenance.yaml").read_text())[-1]
    assert last["changed"] == {"total_steps": [400, 600], "keep_checkpoints": [2, 1]}
    assert [c.name for c in list_checkpoints(run_dir / "checkpoints")] == ["step_0000000600"]
    assert main(["resume", str(run_dir)]) == 0  # the recorded budget is the new one: nothing to do


def test_a_hand_edited_config_does_not_fit_the_checkpoint(tmp_path):
    run_dir = _trained_run(tmp_path)
    path = run_dir / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["model"]["hiddens"] = [32, 32]
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"model.hiddens: \[64\] -> \[32, 32\]"):
        build_run(build_config(config), run_dir, verbose=False).train()


def test_checkpoint_folders_without_a_complete_checkpoint_are_not_overwritten(tmp_path, capsys):
    run_dir = _trained_run(tmp_path)
    for checkpoint in list_checkpoints(run_dir / "checkpoints"):
        (checkpoint / "manifest.json").unlink()
    metrics = (run_dir / "metrics.csv").read_bytes()
    capsys.readouterr()
    assert main(["resume", str(run_dir), "total_steps=600"]) == 2
    err = capsys.readouterr().err
    assert "2 checkpoint folder(s)" in err and "none is complete" in err and "nothing was resumed" in err
    assert (run_dir / "metrics.csv").read_bytes() == metrics


def _rows(run_dir: Path) -> list[dict]:
    timing = {"sps", "updates_per_s", "wall_s"}
    with (run_dir / "metrics.csv").open() as handle:
        return [{k: v for k, v in r.items() if k not in timing} for r in csv.DictReader(handle)]


def test_a_budget_off_the_report_grid_resumes_to_the_rows_of_an_uninterrupted_run(tmp_path):
    straight = build_run(build_config(_corridor(600)), tmp_path / "a", verbose=False)
    straight.train()
    straight.close()
    short = build_run(build_config(_corridor(260)), tmp_path / "b", verbose=False)
    short.train()  # its last row, at 260, is off the grid of 100
    short.close()
    assert [r["env_steps"] for r in _rows(tmp_path / "b")] == ["100", "200", "260"]
    resumed = build_run(build_config(_corridor(600)), tmp_path / "b", verbose=False)
    resumed.train()
    resumed.close()
    assert _rows(tmp_path / "b") == _rows(tmp_path / "a")


def test_a_budget_below_a_runs_progress_leaves_its_config_as_trained(tmp_path):
    """Training a run of 400 env steps again with total_steps=200 (from Python) trains
    nothing, and its config.yaml keeps the 400 its metrics were trained to."""
    for total in (400, 200):
        run = build_run(build_config(_corridor(total)), tmp_path, verbose=False)
        run.train()
        run.close()
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["total_steps"] == 400
    assert _rows(tmp_path)[-1]["env_steps"] == "400"


def test_the_metrics_of_a_complete_run_are_not_rewritten(tmp_path):
    run_dir = _trained_run(tmp_path)
    stat = (run_dir / "metrics.csv").stat()
    assert main(["resume", str(run_dir)]) == 0
    assert (run_dir / "metrics.csv").stat().st_mtime_ns == stat.st_mtime_ns


def test_the_refused_resume_of_a_run_named_by_no_preset_does_not_name_one(tmp_path):
    """A run of a YAML file or a dict takes the file's name as its ``preset``, which is no
    preset that ``relayrl train`` knows: the refusal points to the file instead."""
    run = build_run(build_config(_corridor()), tmp_path, verbose=False)
    run.train()
    run.close()
    changed = _corridor()
    changed["dqn"] = {**changed["dqn"], "lr": 0.5}
    with pytest.raises(ConfigError) as caught:
        build_run(build_config(changed), tmp_path, verbose=False)
    assert "relayrl train <the YAML file or preset you trained from> KEY=VALUE" in str(caught.value)


def test_eval_of_a_checkpoint_without_the_runs_policy_names_the_revision(tmp_path, capsys):
    """A checkpoint holds its policies by id; a run whose config (as another relayrl revision
    wrote it) names another id gets the refusal, not a KeyError."""
    run = build_run(build_config(_corridor(200)), tmp_path, verbose=False)
    run.train()
    run.close()
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    saved.update(policies={"walker": {}}, match=[{"runner": "walker"}])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    capsys.readouterr()
    assert main(["eval", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "step_0000000200 holds policies ['runner'], not this run's 'walker': another relayrl revision wrote it" in err and "Traceback" not in err


@pytest.mark.parametrize(("section", "units"), [
    ({"recurrent": True, "chunk_length": 8}, "12 chunks of on_policy.chunk_length steps (2 per env copy x 2 copies x 3 agents)"),
    ({"minibatch_unit": "env_step"}, "32 steps (16 per env copy x 2 copies)"),
])
def test_more_minibatches_than_a_rollout_holds_are_refused_before_training(tmp_path, section, units):
    """A rollout of 16 steps of 2 copies of 3 runners: 12 chunks of 8 steps to cut, or 32
    whole env steps; 40 minibatches are refused with the count and the fix."""
    config = {"preset": "corridor-minibatches", "env": {**CORRIDOR, "num_envs": 2}, "total_steps": 320, "eval": {"interval": 0},
              "on_policy": {"algo": "ppo", "rollout_length": 16, "minibatches": 40, "hidden": [8], **section}}
    with pytest.raises(ConfigError, match="on_policy.minibatches=40 is more than its rollout holds") as refused:
        build_run(build_config(config), tmp_path / "run", verbose=False)
    assert units in str(refused.value) and "set on_policy.minibatches to at most" in str(refused.value)
    assert not (tmp_path / "run").exists()


def test_qmix_on_a_pettingzoo_env_of_box_actions_names_the_learners_that_act_on_them(tmp_path):
    config = {"preset": "spread-box-qmix", "env": {"name": "mpe2.simple_spread_v3", "settings": {"continuous_actions": True}, "num_envs": 2},
              "total_steps": 500, "eval": {"interval": 0}, "qmix": {}}
    with pytest.raises(ConfigError, match=r"group 'agent' has Box actions \(5,\); qmix and its family need discrete ones \(.*mappo, masac.* act on continuous actions"):
        build_run(build_config(config), tmp_path / "run", verbose=False)
    del config["qmix"]
    with pytest.raises(ConfigError, match=r"dqn learners need discrete ones .* or give the env discrete actions, as mpe2's envs do with env.settings.continuous_actions"):
        build_run(build_config({**config, "dqn": {}}), tmp_path / "run", verbose=False)


def test_a_run_directory_given_for_a_preset_is_named_so(tmp_path, capsys):
    run_dir = tmp_path / "corridor-0123abcd" / "0"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(_corridor()))
    for command in ("show", "train"):
        assert main([command, str(run_dir)]) == 2
        err = capsys.readouterr().err
        assert f"{run_dir} is a directory, where a preset name or a YAML file is expected: its settings are {run_dir / 'config.yaml'}" in err


def _limit_file_size(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_failed_metrics_rewrite_keeps_the_file_whole(tmp_path):
    """A resume from an earlier checkpoint rewrites metrics.csv without its later rows; when
    that write fails (here: a file-size limit, as a full disk would), the file stays whole."""
    run_dir = _trained_run(tmp_path)
    shutil.rmtree(run_dir / "checkpoints" / "step_0000000400")
    before = (run_dir / "metrics.csv").read_bytes()
    cmd = [sys.executable, "-m", "relayrl.cli", "resume", str(run_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_limit_file_size(200), timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"could not rewrite {run_dir / 'metrics.csv'} with this run's columns and without the 1 row(s) after the checkpoint (File too large); it is unchanged" in done.stderr
    assert (run_dir / "metrics.csv").read_bytes() == before
    assert not list(run_dir.glob(".tmp_*"))


def _mount_tmpfs(path: Path, size: int) -> bool:
    path.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    return subprocess.run(mount, capture_output=True).returncode == 0


@pytest.mark.parametrize("disk", ["full", "file size limit"])
def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one(tmp_path, disk):
    """A disk with room for about 0.8 of a checkpoint more (the networks and optimiser state
    are most of it), or a file-size limit of 1 MB, refuses the next checkpoint."""
    run_dir = _trained_run(tmp_path / "runs")
    used = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file())
    limit = None
    if disk == "full":
        if not _mount_tmpfs(tmp_path / "disk", int(used * 1.4)):
            pytest.skip("mounting a small tmpfs needs root")
        run_dir = Path(shutil.copytree(run_dir, tmp_path / "disk" / "run"))
    else:
        limit = 1_000_000  # below a checkpoint's network file, above the metrics
    try:
        metrics = (run_dir / "metrics.csv").read_text()
        cmd = [sys.executable, "-m", "relayrl.cli", "resume", str(run_dir), "total_steps=1200"]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=600, preexec_fn=_limit_file_size(limit) if limit else None
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "could not write checkpoint step_0000000600" in done.stderr and "step_0000000400 is intact" in done.stderr
        assert "No space left on device" in done.stderr if disk == "full" else "File too large" in done.stderr
        assert [c.name for c in list_checkpoints(run_dir / "checkpoints")] == ["step_0000000200", "step_0000000400"]
        assert not list((run_dir / "checkpoints").glob(".tmp_*"))
        rows = [r["env_steps"] for r in _rows(run_dir)]
        assert (run_dir / "metrics.csv").read_text().startswith(metrics) and rows == ["200", "400", "600"]
    finally:
        if disk == "full":
            subprocess.run(["umount", str(tmp_path / "disk")], check=False)


# ---------------------------------------------------------------- environments


@pytest.mark.parametrize(
    "fault,expected",
    [
        ("unknown_agent", ["'intruder_0'", "not in possible_agents", "step 3"]),
        ("vanish", ["'runner_1'", "left env.agents without terminating or truncating", "step 3"]),
        ("comes_back", ["'runner_1'", "in env.agents again after their episode ended", "runner_1 at step 3"]),
        ("no_reward", ["'runner_1'", "acted but have no entry in step()'s rewards", "step 3"]),
        ("no_obs", ["'runner_1'", "acted but have no entry in step()'s observations", "step 3"]),
        ("done_api", ["step() returned a 4-tuple (the 4-tuple of Gym's old done API", "step 3"]),
        ("reset_obs_only", ["reset() returned dict; it must return (observations, infos)"]),
    ],
)
def test_an_env_that_breaks_the_pettingzoo_contract_is_named(tmp_path, fault, expected):
    run = build_run(build_config(_corridor()), tmp_path, Factories(env=faulty_factory(fault)), verbose=False)
    with pytest.raises(EnvError) as caught:
        run.train()
    run.close()
    assert "FaultyCorridor breaks the PettingZoo Parallel API" in str(caught.value)
    for fragment in expected:
        assert fragment in str(caught.value)


def test_a_turn_based_pettingzoo_env_is_refused_with_what_relayrl_steps():
    """Tic-tac-toe is an AEC env: named by its module, and handed over as an env, the
    refusal says that relayrl steps Parallel envs and how a simultaneous-move AEC env converts."""
    from pettingzoo.classic import tictactoe_v3

    from relayrl.envs import ParallelEnvAdapter

    with pytest.raises(ConfigError) as caught:
        build_config({"preset": "ttt", "env": {"name": "pettingzoo.classic.tictactoe_v3"}, "on_policy": {"algo": "ppo"}})
    assert "has env() only" in str(caught.value) and "aec_to_parallel" in str(caught.value)
    with pytest.raises(EnvError, match="is a PettingZoo AEC env, not a Parallel one: relayrl steps Parallel envs"):
        ParallelEnvAdapter(tictactoe_v3.env())


@pytest.mark.parametrize("fault,what", [("nan_reward", "reward (nan)"), ("inf_obs", "next_obs (inf)")])
def test_non_finite_env_output_stops_the_run_with_the_agent_named(tmp_path, fault, what):
    """The fault comes at env step 300, after the checkpoint at 200, which stays the latest."""
    run = build_run(build_config(_corridor(1000)), tmp_path, Factories(env=faulty_factory(fault, at_step=300)), verbose=False)
    with pytest.raises(NonFiniteError) as caught:
        run.train()
    run.close()
    message = str(caught.value)
    assert f"non-finite {what} for agent 'runner_1' of group 'runner'" in message
    assert "at env step 296" in message and "the last checkpoint step_0000000200" in message
    assert [c.name for c in list_checkpoints(tmp_path / "checkpoints")] == ["step_0000000200"]
    assert [r["env_steps"] for r in _rows(tmp_path)] == ["100", "200"]


def test_a_diverging_loss_stops_the_run_and_the_last_checkpoint_stays_finite(tmp_path):
    """A learning rate of 1e12 overflows the Q-values within a few updates after learning
    starts at 250 env steps, after the checkpoint at 200."""
    config = _corridor(1000, dqn={"learning_starts": 250, "buffer_size": 500, "batch_size": 8, "lr": 1e12})
    run = build_run(build_config(config), tmp_path, verbose=False)
    with pytest.raises(NonFiniteError, match=r"the td_loss and grad_norm of agent\(s\) .* are not finite"):
        run.train()
    run.close()
    (checkpoint,) = list_checkpoints(tmp_path / "checkpoints")
    assert checkpoint.name == "step_0000000200"
    networks = load_policies(checkpoint)["runner"]["networks"]["online"]
    assert all(torch.isfinite(t).all() for t in networks.values())


@pytest.mark.parametrize("vector, where", [("sync", "env copy 0: "), ("subproc", "env worker 0 raised during step:\nenv copy 0: ")])
def test_an_exception_in_an_env_is_named_alike_in_this_process_and_in_a_worker(tmp_path, vector, where):
    """The env, the step of its episode and the line that raised, under both vector kinds;
    a worker names its copies as the run numbers them."""
    config = _corridor(env={**CORRIDOR, "num_envs": 2, "vector": vector})
    run = build_run(build_config(config), tmp_path, Factories(env=faulty_factory("raise")), verbose=False)
    try:
        with pytest.raises(EnvError) as caught:
            run.train()
    finally:
        run.close()
    assert str(caught.value).startswith(
        f"{where}FaultyCorridor.step() raised RuntimeError: the simulator lost its physics engine, in step 3 of its episode (faulty_env.py:"
    )
    if vector == "subproc":  # copy 1 runs in the second worker
        assert "env worker 1 raised during step:\nenv copy 1: FaultyCorridor.step() raised" in str(caught.value)


def test_an_optional_extra_that_is_missing_is_named_with_its_install_command(tmp_path, capsys):
    """Simulated by hiding magent2 from the import system of a child process."""
    script = (
        "import sys; sys.modules['magent2'] = None\n"
        "from relayrl.cli import main\n"
        f"sys.exit(main(['train', 'battle-ddqn', '--out', {str(tmp_path)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "battle needs magent2, which is not installed: pip install -c constraints.txt -e '.[magent]'" in done.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("text,expected", [
    ("# a comment only\n", "holds no config keys: give at least the env and a learner section"),
    ("env:\n\tname: corridor\n", "is not valid YAML"),
    ("preset: battle-ddqn\ndqn: {lr: 0.001}\n", "names preset 'battle-ddqn', but a file's preset: only names its run, whose other keys take the defaults"),
])
def test_an_empty_or_broken_yaml_file_is_refused_by_its_name(tmp_path, capsys, text, expected):
    """Not a full default run for a file of comments, nor a Pursuit run under a Battle preset's
    name; YAML's own error names the file, not a string."""
    path = tmp_path / "run.yaml"
    path.write_text(text)
    assert main(["train", str(path), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path} {expected}") and "<unicode string>" not in err
    assert not (tmp_path / "runs").exists()


def test_a_python_config_naming_a_preset_is_refused_where_it_leaves_keys_out(tmp_path):
    """A dict naming a preset does not start from it: ``train({"preset": "pursuit-super-quantile",
    ...})`` would train the defaults (DDQN without sharing) under SUPER's name."""
    from relayrl.experiment import apply_overrides, preset_dict, train, train_policies

    fix = "build_config(apply_overrides(preset_dict('pursuit-super-quantile'), ['key=value', ...])) in Python"
    with pytest.raises(ConfigError, match=re.escape(fix)):
        train({"preset": "pursuit-super-quantile", "total_steps": 5000}, tmp_path / "runs")
    with pytest.raises(ConfigError, match=re.escape(fix)):
        build_config({"preset": "pursuit-super-quantile", "total_steps": 5000})
    with pytest.raises(ConfigError, match="names preset 'pursuit-ddqn', but a config's preset: only names its run"):
        train_policies({"a": {}}, [{"pursuer": ["a"] * 8}], 1000, preset="pursuit-ddqn", out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
    changed = build_config(apply_overrides(preset_dict("pursuit-super-quantile"), ["total_steps=5000"]))
    assert changed.sharing.select == "quantile" and changed.total_steps == 5000
    assert build_config({"preset": "my-corridor", "env": {"name": "corridor"}}).preset == "my-corridor"


def test_a_run_saved_before_a_key_was_added_still_resumes_and_loads(tmp_path):
    """A config.yaml written by an older revision lacks the keys added since; its run names
    a preset, yet resumes and loads with the defaults for those keys, as it trained then."""
    from relayrl.experiment import load_run

    run_dir = _trained_run(tmp_path)
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["rounds"] == []
    (run_dir / "config.yaml").write_text(yaml.safe_dump({k: v for k, v in saved.items() if k != "rounds"}))
    assert main(["resume", str(run_dir), "total_steps=600"]) == 0
    load_run(run_dir).close()


def test_a_runs_own_config_file_names_its_preset_and_is_taken_as_it_is(tmp_path):
    from relayrl.experiment.presets import config_dict, load_preset

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(load_preset("battle-ddqn").model_dump(mode="json")))
    assert build_config(config_dict(str(path))) == load_preset("battle-ddqn")


def test_a_plot_of_a_column_the_metrics_lack_is_one_line(tmp_path, capsys):
    run_dir = _trained_run(tmp_path)
    capsys.readouterr()
    assert main(["plot", str(run_dir), "--key", "no_such_column", "--out", str(tmp_path / "p.png")]) == 2
    assert capsys.readouterr().err.strip() == f"error: no 'no_such_column' values in {run_dir}: pick a column of its metrics.csv"


@pytest.mark.parametrize("command", [["plot"], ["table", "--at", "100"]])
def test_a_plot_or_table_of_a_folder_without_runs_names_it(tmp_path, capsys, command):
    """A typo'd or not yet started experiment is refused, not drawn or tabled as empty."""
    (tmp_path / "runs" / "pursuit-ddqn-0000").mkdir(parents=True)
    empty = tmp_path / "runs" / "pursuit-ddqn-0000"
    assert main([command[0], str(empty), *command[1:]]) == 2
    assert capsys.readouterr().err.startswith(f"error: no run under {empty}: no metrics.csv there or in its folders")


@pytest.mark.parametrize("settings, section, message", [
    ({"continuous_actions": True}, {"centralised": {"algo": "maddpg", "gumbel_temperature": 0.5}},
     r"centralised\.gumbel_temperature is read for discrete actions only, and group 'agent' has Box actions: remove gumbel_temperature"),
    ({}, {"on_policy": {"algo": "mappo", "log_std_init": -1.0}}, r"on_policy\.log_std_init is read for Box actions only, and group 'agent' has discrete actions"),
    ({}, {"on_policy": {"algo": "ppo", "action_bounds": "clip"}}, r"on_policy\.action_bounds is read for Box actions only"),
    ({}, {"on_policy": {"algo": "ppo", "agent_id": False, "param_sharing": False}}, r"on_policy\.agent_id=false .* param_sharing=false gives each agent a network of its own"),
])
def test_a_setting_the_groups_actions_make_its_learner_ignore_is_refused(settings, section, message):
    config = build_config({"env": {"name": "simple-spread", "settings": settings}, **section, "total_steps": 200, "eval": {"interval": 0}})
    with pytest.raises(ConfigError, match=message):
        build_run(config, None, verbose=False)
