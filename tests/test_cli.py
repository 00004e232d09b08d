"""Every CLI verb runs end to end on a tiny Pursuit."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from relayrl.cli import main
from relayrl.experiment import build_config, load_run
from tiny_runs import TINY_PURSUIT as TINY


def _run_dir(root: Path) -> Path:
    (run_dir,) = [p.parent for p in root.glob("*/*/config.yaml")]
    return run_dir


def test_list_and_show(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "pursuit-super-quantile" in out and "pursuit-paramshare" in out
    assert "algorithms: a2c, ddpg, dqn, maddpg, mappo, masac, matd3, ppo, qmix, sac, seac, td3" in out and "selection modes (sharing.select): quantile" in out
    assert "qmix (qmix section): discrete actions, off-policy, recurrent, centralised, reads the global state, parameter sharing; no sharing mode" in out
    assert "td3 (actor_critic section): continuous actions, off-policy; sharing modes: sharing.select, sharing.replay=shared" in out
    assert "policy kinds (policies.<id>.kind): learning, frozen, snapshot, random, scripted" in out and "corrections (sharing.correction): dps, none" in out
    assert main(["show", "pursuit-super-gaussian", "sharing.bandwidth=0.01"]) == 0
    out = capsys.readouterr().out
    assert "bandwidth: 0.01" in out and "select: gaussian" in out
    assert main(["show", "halfcheetah-dase-td3", "--seed", "4", "actor_critic.tau=0.01"]) == 0  # overrides after options
    out = capsys.readouterr().out
    assert "tau: 0.01" in out and "seed: 4" in out and "n_agents: 2" in out
    with pytest.raises(SystemExit):
        main(["show", "halfcheetah-td3", "--no-such-option"])


def test_train_a_yaml_config_file(tmp_path, capsys):
    """A YAML file of config keys trains like a preset; what it leaves out takes the defaults."""
    path = tmp_path / "my_corridor.yaml"
    path.write_text(
        "total_steps: 400\nreport_interval: 200\ncheckpoint_interval: 400\neval: {interval: 0}\n"
        "env: {name: corridor, settings: {n_agents: 3, length: 5, max_steps: 12}}\n"
        "model: {hiddens: [16], head_hidden: 16}\n"
        "dqn: {learning_starts: 100, buffer_size: 1000, batch_size: 8}\nsharing: {select: quantile}\n"
    )
    assert main(["train", str(path), "dqn.lr=1e-3", "--out", str(tmp_path / "runs")]) == 0
    run_dir = _run_dir(tmp_path / "runs")
    assert run_dir.parent.name.startswith("my_corridor-")
    saved = (run_dir / "config.yaml").read_text()
    assert "select: quantile" in saved and "lr: 0.001" in saved and "gamma: 0.99" in saved
    assert len((run_dir / "metrics.csv").read_text().splitlines()) == 3
    (tmp_path / "bad.yaml").write_text("dqn: {lr: [1, 2}\n")
    assert main(["train", str(tmp_path / "bad.yaml")]) == 2
    assert "bad.yaml is not valid YAML" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _train_file(tmp_path: Path, body: str, out: Path, *args: str) -> Path:
    """Trains a config file (evaluations off) into ``out``; its run directory."""
    path = tmp_path / "run.yaml"
    path.write_text("eval: {interval: 0}\n" + body)
    assert main(["train", str(path), *args, "--out", str(out)]) == 0
    return next(out.glob("*/*/metrics.csv")).parent


def test_eval_acts_greedily_or_as_training_does_and_prints_json(tmp_path, capsys):
    """``--explore`` samples the PPO policy's actions (the greedy episodes are all alike,
    the sampled ones not), reproducibly for a seed; ``--json`` gives every episode's reward."""
    body = "env: {name: corridor, settings: {n_agents: 3, length: 4, max_steps: 12}}\non_policy: {algo: ppo, rollout_length: 32, hidden: [16]}\n"
    run_dir = _train_file(tmp_path, "total_steps: 256\nreport_interval: 128\ncheckpoint_interval: 256\n" + body, tmp_path / "runs")
    capsys.readouterr()
    played = {}
    for mode in ([], ["--explore"], ["--explore"]):
        assert main(["eval", str(run_dir), "--episodes", "16", "--json", *mode]) == 0
        played.setdefault(tuple(mode), []).append(json.loads(capsys.readouterr().out))
    greedy, (explored, again) = played[()][0], played[("--explore",)]
    assert greedy["acting"] == "greedy" and explored["acting"] == "explore" and explored["env_steps"] == 256
    assert len(set(greedy["trained"])) == 1 and len(set(explored["trained"])) > 1  # one deterministic policy on one corridor
    assert explored == again and len(explored["random"]) == 16
    assert main(["eval", str(run_dir), "--episodes", "2", "--explore"]) == 0
    assert "as training at env step 256 (sampled actions" in capsys.readouterr().out


def test_eval_records_one_game_of_the_trained_policies_as_a_gif(tmp_path, capsys):
    """``--record`` draws one game from its start to its last decision (20 steps here) into
    a GIF; the game is the one an evaluation of one episode plays, with the same returns. A
    path that is not a GIF is refused before anything is loaded."""
    from PIL import Image

    body = ("total_steps: 240\nreport_interval: 120\ncheckpoint_interval: 240\n"
            "env: {name: cooperative-navigation, num_envs: 2, settings: {max_cycles: 20}}\n"
            "centralised: {algo: masac, hidden: [16, 16], batch_size: 16, random_steps: 80, fragment_length: 8, buffer_size: 1000}\n")
    run_dir = _train_file(tmp_path, body, tmp_path / "runs")
    capsys.readouterr()
    gif = tmp_path / "game.gif"
    assert main(["eval", str(run_dir), "--episodes", "3", "--record", str(gif), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["recorded"] == str(gif) and result["recorded_frames"] == 20
    with Image.open(gif) as image:
        assert image.size == (400, 400) and image.n_frames > 1
    run = load_run(run_dir)
    try:
        frames, returns = run.evaluator.film()
        assert len(frames) == 20 and np.array_equal(returns, run.evaluator.play(1))
        assert result["recorded_reward"] == float(returns[0, 0])
    finally:
        run.close()
    assert main(["eval", str(run_dir), "--record", str(tmp_path / "game.mp4")]) == 2
    assert "path ending in .gif or .webp, not game.mp4" in capsys.readouterr().err


def test_eval_against_another_opponent_from_the_command_line(tmp_path, capsys):
    """``relayrl eval RUN 'policies.walker={kind: frozen, checkpoint: OTHER}'`` plays the
    run's runners against another run's walkers (their networks, not the run's own), and
    ``policies.walker.kind=random`` against random ones; the run itself is unchanged."""
    body = ("total_steps: 400\nreport_interval: 200\ncheckpoint_interval: 400\n"
            "env: {name: corridor, settings: {n_agents: 2, n_walkers: 2, length: 4, max_steps: 12}}\n"
            "model: {hiddens: [16], head_hidden: 16}\ndqn: {learning_starts: 100, buffer_size: 1000, batch_size: 8}\n")
    mine = _train_file(tmp_path, body, tmp_path / "a")
    _train_file(tmp_path, body, tmp_path / "b", "--seed", "1")
    other = next((tmp_path / "b").glob("*/1"))
    config_text = (mine / "config.yaml").read_text()
    capsys.readouterr()
    results = {}
    for name, change in (("own", []), ("other", [f"policies.walker={{kind: frozen, checkpoint: {other}}}"]), ("random", ["policies.walker.kind=random"])):
        assert main(["eval", str(mine), *change, "--episodes", "8", "--json"]) == 0
        results[name] = json.loads(capsys.readouterr().out)
    assert results["other"]["overrides"] == [f"policies.walker={{kind: frozen, checkpoint: {other}}}"] and results["own"]["overrides"] == []
    saved = yaml.safe_load(config_text)
    loaded = load_run(mine, config=build_config({**saved, "policies": {"walker": {"kind": "frozen", "checkpoint": str(other)}}}))
    theirs = load_run(other)
    try:
        for a, b in zip(loaded.policies["walker"].algorithm.online.parameters(), theirs.policies["walker"].learner.algorithm.online.parameters()):
            assert torch.equal(a, b)
    finally:
        loaded.close()
        theirs.close()
    assert (mine / "config.yaml").read_text() == config_text


def test_train_resume_eval_plot_table(tmp_path, capsys):
    assert main(["train", "pursuit-quickstart", *TINY, "--seed", "3", "--out", str(tmp_path)]) == 0
    run_dir = _run_dir(tmp_path)
    assert run_dir.name == "3"
    for name in ("config.yaml", "provenance.yaml", "metrics.csv"):
        assert (run_dir / name).is_file()
    assert list((run_dir / "tb").iterdir())
    header, *rows = (run_dir / "metrics.csv").read_text().splitlines()
    for column in ("env_steps", "agent_steps", "updates", "episode_reward_mean", "eval_reward_mean",
                   "episode_len_mean", "bandwidth_actual", "td_loss", "epsilon", "sps", "updates_per_s", "wall_s"):
        assert column in header.split(",")
    assert len(rows) == 2
    assert main(["resume", str(run_dir), "total_steps=600"]) == 0
    assert len((run_dir / "metrics.csv").read_text().splitlines()) == 1 + 3
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "random reward" in out and "step_0000000600" in out
    earlier = run_dir / "checkpoints" / "step_0000000400"
    assert main(["eval", str(run_dir), "--episodes", "2", "--checkpoint", str(earlier), "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "step_0000000400" in out and " 5\n" in out
    out_png = tmp_path / "curve.png"
    assert main(["plot", str(run_dir.parent), "--out", str(out_png), "--bin", "200"]) == 0
    assert out_png.stat().st_size > 1000
    assert main(["table", str(run_dir.parent), "--at", "600", "--bin", "200"]) == 0
    assert "| pursuit-quickstart-" in capsys.readouterr().out


def test_bad_input_fails_before_training(tmp_path, capsys):
    assert main(["train", "pursuit-nope", "--out", str(tmp_path)]) == 2
    assert "unknown preset" in capsys.readouterr().err
    assert main(["train", "pursuit-ddqn", "dqn.gama=0.9", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "dqn.gama" in err and "gamma" in err
    assert not list(tmp_path.iterdir())  # nothing was created


def test_console_script_is_installed():
    out = subprocess.run(["relayrl", "list"], capture_output=True, text=True, check=True)
    assert "pursuit-ddqn" in out.stdout


@pytest.mark.parametrize(
    ("script", "shows"),
    [("examples/custom_env_and_network.py", "greedy reward per episode"), ("examples/arena_from_python.py", "'copied_from'")],
)
def test_example_runs(script, shows, tmp_path):
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / script)], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert shows in out.stdout


def test_bench_writes_a_report_with_ratios(tmp_path, capsys):
    out = tmp_path / "bench.md"
    assert main(["bench", "--quick", "--only", "env", "--out", str(out)]) == 0
    report = out.read_text()
    assert "Machine:" in report and "PettingZoo pursuit_v5 (baseline)" in report
    assert "| relayrl vectorised pursuit | 64 |" in report
    assert main(["bench", "--only", "nonsense"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


@pytest.mark.parametrize("preset", ["battle-coevolve-super-quantile", "adversarial-pursuit-coevolve-ddqn"])
def test_a_magent_preset_runs_a_few_hundred_steps(tmp_path, preset, capsys):
    """Two teams: both train, and ``eval`` names the team whose reward it compares with random play."""
    pytest.importorskip("magent2")
    overrides = ["total_steps=200", "dqn.learning_starts=100", "dqn.buffer_size=300", "eval.interval=0", "report_interval=100"]
    assert main(["train", preset, *overrides, "--out", str(tmp_path)]) == 0
    rows = (next(tmp_path.glob(f"{preset}-*")) / "0" / "metrics.csv").read_text().splitlines()
    assert len(rows) == 3 and "td_loss/" in rows[0]
    capsys.readouterr()
    assert main(["eval", str(_run_dir(tmp_path)), "--episodes", "1"]) == 0
    team = {"battle-coevolve-super-quantile": "blue", "adversarial-pursuit-coevolve-ddqn": "prey"}[preset]
    assert re.search(rf"group +{team} \(the others act alike in both\)", capsys.readouterr().out)


def test_dase_run_trains_and_evaluates_against_random_actions(tmp_path, capsys):
    args = ["train", "swimmer-dase-td3", "total_steps=60", "actor_critic.random_steps=20", "eval.interval=0",
            "checkpoint_interval=60", "--out", str(tmp_path)]
    assert main(args) == 0
    run_dir = _run_dir(tmp_path)
    assert main(["eval", str(run_dir), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "random" in out and "greedy" in out


def test_a_qmix_run_trains_and_evaluates_against_random_actions(tmp_path, capsys):
    args = ["train", "predator-prey-small-accmer", "total_steps=400", "qmix.batch_size=2", "qmix.buffer_size=20",
            "eval.interval=0", "checkpoint_interval=400", "--out", str(tmp_path)]
    assert main(args) == 0
    assert main(["eval", str(_run_dir(tmp_path)), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "random" in out and "greedy" in out


def test_quickstart_prints_its_summary_and_plot(tmp_path, capsys):
    """The README's main job on a tiny budget: it may not beat random in 400 steps (exit 2
    then, by design), but it trains, evaluates, prints every summary row and draws."""
    code = main(["quickstart", *TINY, "--episodes", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code in (0, 2)
    for row in ("env steps", "updates per agent", "realised bandwidth", "greedy eval reward", "gap (trained - random)"):
        assert row in out
    steps = next(line for line in out.splitlines() if line.startswith("env steps "))
    assert steps.split()[-1] == "400", steps  # the run's, also when the summary is built from its checkpoint
    assert (_run_dir(tmp_path) / "learning_curve.png").is_file()


def test_arena_shows_each_rounds_scheme_table(tmp_path):
    rounds = "rounds=[{steps: 600}, {steps: 600}]"
    done = subprocess.run(
        [sys.executable, "-m", "relayrl.cli", "arena", "predator-prey-small-pbt-qmix", rounds, "total_steps=1200", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "round 1/2 ended at env step 600" in done.stdout and "pbt, round 2" in done.stdout
    assert "round 2/2 from env step 600: the run's env; matches predator: p0" in done.stdout
    assert (_run_dir(tmp_path) / "pbt.csv").is_file()
    drawn = subprocess.run([sys.executable, "-m", "relayrl.cli", "plot", "--rounds", str(_run_dir(tmp_path)), "--out", str(tmp_path / "rounds.png")], capture_output=True, text=True)
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "rounds.png").stat().st_size > 10_000
    refused = subprocess.run([sys.executable, "-m", "relayrl.cli", "arena", "predator-prey-small-qmix", "--out", str(tmp_path)], capture_output=True, text=True)
    assert refused.returncode != 0 and "has no rounds" in refused.stderr


def test_help_imports_neither_torch_nor_the_registries():
    """relayrl --help starts at once: the commands import the heavy parts where they use them."""
    script = ("import sys\nfrom relayrl.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
              "print(sorted(m for m in ('torch', 'scipy.stats', 'relayrl.algos', 'relayrl.experiment.config') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", [["list"], ["show", "pursuit-super-quantile"], ["show", "predator-prey-small-accmer", "qmix.lr=0.01"]])
def test_list_and_show_do_not_import_torch(command):
    """The registries and config sections are read without the networks: list and show
    validate every config key without importing torch."""
    script = f"import sys\nfrom relayrl.cli import main\nmain({command!r})\nprint('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_seed_given_twice_is_refused_and_a_closed_pipe_is_not_an_error(capsys):
    assert main(["show", "pursuit-ddqn", "seed=3", "--seed", "1"]) == 2
    assert "the seed is given twice, as seed=3 and as --seed 1: give one of them" in capsys.readouterr().err
    assert main(["show", "pursuit-ddqn", "seed=1", "--seed", "1"]) == 0
    piped = f"{sys.executable} -m relayrl.cli show pursuit-ddqn | head -1; exit ${{PIPESTATUS[0]}}"  # show writes past what head reads
    shown = subprocess.run(["bash", "-c", piped], capture_output=True, text=True, timeout=120)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, "preset: pursuit-ddqn\n", "")


def test_relayrls_warnings_read_as_its_errors_do():
    """A setting that works but will disappoint prints ``warning: <message>``, without
    Python's category and the source line of the library that validated it."""
    settings = "centralised={algo: maddpg, batch_size: 32, fragment_length: 40}"
    shown = subprocess.run([sys.executable, "-m", "relayrl.cli", "show", "pursuit-maddpg", settings], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0
    assert shown.stderr.startswith("warning: centralised.updates_per_fragment=50 gradient steps every fragment_length=40 env steps")
    assert "UserWarning" not in shown.stderr and "pydantic" not in shown.stderr


def test_a_warning_prints_once_however_often_its_section_is_validated(tmp_path, capsys):
    """A MASAC policy of 50 updates per 8 env steps beside MAPPO: its section is validated for
    the run and again for the policy's recipe, and the warning once printed three times."""
    config = tmp_path / "mix.yaml"
    config.write_text("total_steps: 50\nreport_interval: 50\neval: {interval: 0}\n"
                      "env: {name: simple-tag, num_envs: 2, settings: {continuous_actions: true}}\n"
                      "on_policy: {algo: mappo, rollout_length: 25, epochs: 1, minibatches: 1}\n"
                      "policies: {agent: {centralised: {algo: masac, batch_size: 8, hidden: [8], fragment_length: 8, random_steps: 16, buffer_size: 100}}}\n")
    assert main(["train", str(config), "--out", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().err.count("warning: centralised.updates_per_fragment=50") == 1


def test_plot_rounds_of_a_run_without_a_scheme_says_what_it_draws(tmp_path, capsys):
    config = tmp_path / "rounds.yaml"
    config.write_text("env: {name: corridor}\ntotal_steps: 200\nrounds: [{steps: 100}, {steps: 100}]\neval: {interval: 0}\n")
    assert main(["train", str(config), "--out", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    assert main(["plot", "--rounds", str(_run_dir(tmp_path / "runs").parent), "--out", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert "--rounds draws what a tournament, PBT or self-play wrote each round" in err and "disk space" not in err
