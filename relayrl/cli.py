"""Command line: relayrl list | show | train | resume | eval | plot | table | quickstart | bench | reproduce."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import yaml

from relayrl.core.errors import RelayRLError, RelayRLWarning
from relayrl.experiment.metrics import read_metrics
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.run_lock import RunLock

# Commands import the heavy parts (torch, the registries) where they use them, so that
# relayrl --help starts at once.
if TYPE_CHECKING:
    from relayrl.experiment.config import RunConfig
    from relayrl.experiment.run import Run


def _config_from(preset: str, overrides: list[str], seed: int | None) -> RunConfig:
    from relayrl.experiment.config import build_config
    from relayrl.experiment.presets import config_dict

    if Path(preset).is_dir():
        run = f": its settings are {Path(preset) / 'config.yaml'}; relayrl resume or eval takes the run directory itself" if (Path(preset) / "config.yaml").is_file() else ""
        raise RelayRLError(f"{preset} is a directory, where a preset name or a YAML file is expected{run}")
    data = apply_overrides(config_dict(preset), overrides)
    if seed is not None:
        given = [o for o in overrides if o.split("=", 1)[0] == "seed"]
        if given and data.get("seed") != seed:
            raise RelayRLError(f"the seed is given twice, as {given[-1]} and as --seed {seed}: give one of them")
        data["seed"] = seed
    return build_config(data)


def _config_of_run(run_dir: Path, overrides: list[str] | None = None) -> RunConfig:
    from relayrl.experiment.config import validate_config
    from relayrl.experiment.run_dir import built_with, python_resume, saved_config

    saved = saved_config(run_dir)
    made = built_with(run_dir)
    if made:
        raise RelayRLError(f"{run_dir} was built by Python code with {' and '.join(made)}, which the command line cannot rebuild: "
                           f"continue it with {python_resume(run_dir, made)}")
    return validate_config(apply_overrides(saved, overrides or []))


def _train(config: RunConfig, run_dir: Path) -> None:
    """Trains (or resumes) the run in ``run_dir``; one message and nothing built where
    another process trains it, or where it is complete."""
    from relayrl.experiment.build import build_run
    from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints
    from relayrl.experiment.identity import check_resumable
    from relayrl.experiment.run_dir import saved_config

    RunLock(run_dir).check()
    checkpoints = list_checkpoints(run_dir / "checkpoints")
    if checkpoints and (run_dir / "config.yaml").is_file():  # a change a resume may not make is refused, also where nothing is left to train
        check_resumable(saved_config(run_dir), config, str(run_dir))
    if checkpoints and checkpoint_steps(checkpoints[-1]) >= config.total_steps:
        reached = checkpoint_steps(checkpoints[-1])
        print(f"{run_dir} is already complete: its checkpoint is at {reached:,} env steps, total_steps={config.total_steps:,}; nothing to do")
        return
    print(f"resuming {run_dir} from {checkpoints[-1].name}" if checkpoints else f"training {config.preset} seed {config.seed} -> {run_dir}")
    run = build_run(config, run_dir)
    try:
        run.train()
    finally:
        run.close()


def _evaluate_vs_random(run: Run, episodes: int, env_steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The reported group's greedy rewards (with ``env_steps``: acting as training does at
    that step) vs the same group acting uniformly at random (other groups alike in both)."""
    return run.evaluator.against_random(episodes, run.reporter.layout.reported, env_steps)


def _print_table(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    print("-" * (width + 24))
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("-" * (width + 24))


def cmd_list(args: argparse.Namespace) -> None:
    from relayrl.algos import ALGORITHMS
    from relayrl.arena.policy_config import POLICY_KINDS
    from relayrl.core.errors import ConfigError
    from relayrl.envs.registry import ENVS
    from relayrl.experiment.config import import_plugin
    from relayrl.experiment.presets import PRESETS
    from relayrl.sharing.config import CORRECTIONS
    from relayrl.sharing.selectors import SELECTORS

    for module in args.plugins:  # a user's modules: their registrations are listed beside the built-ins
        try:
            import_plugin(module)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    width = max(len(n) for n in PRESETS)
    for name, (description, _) in PRESETS.items():
        print(f"{name:<{width}}  {description}")
    print(f"\nalgorithms: {', '.join(sorted(ALGORITHMS))}")
    for name in sorted(ALGORITHMS):  # each with its config section and what it supports
        print(f"  {name} ({ALGORITHMS[name].section} section): {ALGORITHMS[name].capabilities.describe()}")
    print(f"environments: {', '.join(ENVS)}, any PettingZoo Parallel env by module path, any Gymnasium id")
    print(f"selection modes (sharing.select): {', '.join(SELECTORS)}")
    print(f"corrections (sharing.correction): {', '.join(CORRECTIONS)}")
    print(f"policy kinds (policies.<id>.kind): {', '.join(POLICY_KINDS)}")


def cmd_show(args: argparse.Namespace) -> None:
    from relayrl.experiment.identity import run_dir_for

    config = _config_from(args.preset, args.overrides, args.seed)
    print(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), end="")
    print(f"# run directory: {run_dir_for(config, Path(args.out))}")


def cmd_train(args: argparse.Namespace) -> None:
    from relayrl.experiment.identity import run_dir_for

    config = _config_from(args.preset, args.overrides, args.seed)
    _train(config, run_dir_for(config, Path(args.out)))


def cmd_arena(args: argparse.Namespace) -> None:
    """``train`` for a run of rounds: progress per round and each scheme's table at its end."""
    from relayrl.experiment.identity import run_dir_for

    config = _config_from(args.preset, args.overrides, args.seed)
    if not config.rounds:
        raise RelayRLError(f"{args.preset} has no rounds: give it rounds (and a scheme: pbt, tournament, or hooks), or use relayrl train")
    _train(config, run_dir_for(config, Path(args.out)))


def cmd_resume(args: argparse.Namespace) -> None:
    run_dir = Path(args.run_dir)
    _train(_config_of_run(run_dir, args.overrides), run_dir)


def cmd_branch(args: argparse.Namespace) -> None:
    from relayrl.experiment.branch import branch_run

    run_dir = Path(args.run_dir)
    target = branch_run(run_dir, _config_of_run(run_dir), _config_of_run(run_dir, args.overrides), args.at,
                        Path(args.out) if args.out else None)
    print(f"branched {run_dir} into {target}; continue with: relayrl resume {target}")


def _run_at_checkpoint(run_dir: Path, checkpoint: str | None = None, overrides: list[str] | None = None) -> Run:
    from relayrl.experiment.api import load_run

    return load_run(run_dir, checkpoint, config=_config_of_run(run_dir, overrides))


def cmd_eval(args: argparse.Namespace) -> None:
    from relayrl.envs.frames import animation_path, write_animation
    from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints

    if args.record:
        animation_path(args.record)
    run = _run_at_checkpoint(Path(args.run_dir), args.checkpoint, args.overrides)
    read = Path(args.checkpoint) if args.checkpoint else list_checkpoints(Path(args.run_dir) / "checkpoints")[-1]
    if args.seed is not None:
        run.evaluator.seed = args.seed
    step = checkpoint_steps(read)
    trained, baseline = _evaluate_vs_random(run, args.episodes, step if args.explore else None)
    layout = run.reporter.layout
    recorded: dict[str, Any] = {}
    try:
        if args.record:
            frames, returns = run.evaluator.film(step if args.explore else None)
            recorded = {"recorded": str(write_animation(frames, args.record, args.fps)), "recorded_frames": len(frames),
                        "recorded_reward": float(returns[0, layout.reported])}
    finally:
        run.close()
    acting = f"as training at env step {step:,} (sampled actions, DQN's epsilon then)" if args.explore else "greedy"
    if args.json:
        figures = {"trained": trained.tolist(), "random": baseline.tolist(), "trained_mean": float(trained.mean()), "random_mean": float(baseline.mean())}
        print(json.dumps({"run": args.run_dir, "checkpoint": str(read), "env_steps": step, "group": layout.groups[layout.reported],
                          "acting": "explore" if args.explore else "greedy", "overrides": args.overrides, "seed": run.evaluator.seed,
                          "episodes": args.episodes, **figures, **recorded}))
        return
    # with several groups, the one whose reward is the run's figure; the others act alike in both
    group = [("group", f"{layout.groups[layout.reported]} (the others act alike in both)")] if len(layout.groups) > 1 else []
    _print_table(
        [
            *group,
            ("checkpoint", read.name),
            ("acting", acting),
            *([("changed", " ".join(args.overrides))] if args.overrides else []),
            ("seed", str(run.evaluator.seed)),
            ("episodes", str(args.episodes)),
            ("trained reward (mean +- std)", f"{trained.mean():.2f} +- {trained.std():.2f}"),
            ("random reward (mean +- std)", f"{baseline.mean():.2f} +- {baseline.std():.2f}"),
            ("gap", f"{trained.mean() - baseline.mean():+.2f}"),
            *([("recorded", f"{recorded['recorded']} (one game, {recorded['recorded_frames']} frames, trained reward "
                            f"{recorded['recorded_reward']:.2f})")] if recorded else []),
        ]
    )


def cmd_plot(args: argparse.Namespace) -> None:
    from relayrl.experiment.plots import existing_runs, plot_rounds, plot_runs, report_bin

    runs = existing_runs(args.runs)
    if args.rounds:
        print(f"wrote {plot_rounds(runs, Path(args.out))}")
        return
    out = plot_runs(runs, Path(args.out), args.key, args.bin or report_bin(runs), None if args.alpha <= 0 else args.alpha)
    print(f"wrote {out}")


def cmd_table(args: argparse.Namespace) -> None:
    from relayrl.experiment.plots import existing_runs, report_bin, summary_table

    runs = existing_runs(args.runs)
    print(summary_table(runs, args.at, args.bin or report_bin(runs)))


def cmd_quickstart(args: argparse.Namespace) -> None:
    from relayrl.experiment.plots import plot_runs
    from relayrl.experiment.identity import run_dir_for

    config = _config_from("pursuit-quickstart", args.overrides, args.seed)
    run_dir = run_dir_for(config, Path(args.out))
    _train(config, run_dir)
    run = _run_at_checkpoint(run_dir)
    trained, baseline = _evaluate_vs_random(run, args.episodes)
    run.close()
    plot = plot_runs(
        [run_dir],
        run_dir / "learning_curve.png",
        bin_size=config.report_interval,
        alpha=None,
        title="SUPER-quantile DDQN (small network), small Pursuit (8 pursuers): training episodes",
        baseline=("uniformly random policy (evaluation)", float(baseline.mean())),
    )
    rows = read_metrics(run_dir)  # all rows, also when an earlier call did the training
    recent = [r for r in rows[-3:] if not math.isnan(r["episode_reward_mean"])]
    sps = [r["sps"] for r in rows if not math.isnan(r["sps"])]
    upd = [r["updates_per_s"] for r in rows if not math.isnan(r["updates_per_s"])]
    bandwidth = [r["bandwidth_actual"] for r in rows if not math.isnan(r["bandwidth_actual"])]
    _print_table(
        [
            ("env steps", f"{int(rows[-1]['env_steps']):,}"),
            ("updates per agent", f"{int(rows[-1]['updates']):,}"),
            ("training episode reward (last reports)", f"{np.mean([r['episode_reward_mean'] for r in recent]):.2f}" if recent else "-"),
            ("realised bandwidth (target 0.1)", f"{np.mean(bandwidth):.3f}" if bandwidth else "-"),
            ("env steps/s", f"{np.mean(sps):,.0f}" if sps else "-"),
            ("updates/s (per agent)", f"{np.mean(upd):,.0f}" if upd else "-"),
            (f"greedy eval reward ({args.episodes} episodes)", f"{trained.mean():.2f} +- {trained.std():.2f}"),
            (f"random policy reward ({args.episodes} episodes)", f"{baseline.mean():.2f} +- {baseline.std():.2f}"),
            ("gap (trained - random)", f"{trained.mean() - baseline.mean():+.2f}"),
            ("learning curve", str(plot)),
        ]
    )
    if trained.mean() <= baseline.mean():
        raise RelayRLError(
            f"the trained agents ({trained.mean():.2f}) did not beat the uniformly random policy ({baseline.mean():.2f}); "
            f"the run is in {run_dir}"
        )


def cmd_bench(args: argparse.Namespace) -> None:
    from relayrl.bench.suite import SECTIONS, run_suite

    only = [s.strip() for s in args.only.split(",")] if args.only else None
    unknown = sorted(set(only or []) - set(SECTIONS))
    if unknown:
        raise RelayRLError(f"unknown benchmark(s) {unknown}; choose from {', '.join(SECTIONS)}")
    run_suite(only, args.quick, Path(args.out) if args.out else None, args.threads, args.rllib_python, (args.jaxmarl_python, args.jaxmarl_src), args.device)


def cmd_reproduce(args: argparse.Namespace) -> None:
    from relayrl.experiment.reproduce import reproduce

    reproduce(args)


def _at_least(lowest: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{value} is below {lowest}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relayrl", description="multi-agent RL with experience sharing")
    sub = parser.add_subparsers(dest="command", required=True)

    listing = sub.add_parser("list", help="list presets and the registered algorithms, envs, selection modes and policy kinds")
    listing.add_argument("--plugins", nargs="+", default=[], metavar="MODULE", help="your modules that register more of them (a config's plugins)")
    listing.set_defaults(func=cmd_list)

    def with_config_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("overrides", nargs="*", help="dotted.key=value overrides, e.g. dqn.lr=1e-4 total_steps=250000")
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("--out", default="runs", help="root of run directories (default: runs)")

    show = sub.add_parser("show", help="print a preset's resolved config")
    show.add_argument("preset")
    with_config_args(show)
    show.set_defaults(func=cmd_show)

    train = sub.add_parser("train", help="train a preset or a YAML config (resumes if its run directory has checkpoints)")
    train.add_argument("preset", help="a preset name (relayrl list) or a config file, FILE.yaml")
    with_config_args(train)
    train.set_defaults(func=cmd_train)
    arena = sub.add_parser("arena", help="train a run of rounds (a preset or FILE.yaml with rounds and a scheme), showing each round's table")
    arena.add_argument("preset", help="a preset name or a config file, FILE.yaml")
    with_config_args(arena)
    arena.set_defaults(func=cmd_arena)

    resume = sub.add_parser("resume", help="continue a run from its latest checkpoint")
    resume.add_argument("run_dir")
    resume.add_argument("overrides", nargs="*", help="e.g. total_steps=800000 to extend the budget")
    resume.set_defaults(func=cmd_resume)

    branch = sub.add_parser("branch", help="a new run that continues a run from one of its checkpoints under changed settings")
    branch.add_argument("run_dir")
    branch.add_argument("overrides", nargs="+", help="e.g. dqn.new_priority=td total_steps=150000; a change a branch cannot make is refused with the keys it can")
    branch.add_argument("--at", type=_at_least(0), help="env step of the checkpoint (default: the latest)")
    branch.add_argument("--out", help="root of the new run directory (default: the one run_dir is in)")
    branch.set_defaults(func=cmd_branch)

    ev = sub.add_parser("eval", help="evaluation of a run's checkpoint (its latest by default, also while it trains) vs a random policy")
    ev.add_argument("run_dir")
    ev.add_argument("overrides", nargs="*", help="changes to the run's config for this evaluation, e.g. 'policies.red={kind: frozen, checkpoint: "
                    "OTHER_RUN}' (another opponent) or policies.red.kind=random")
    ev.add_argument("--episodes", type=_at_least(1), default=10)
    ev.add_argument("--checkpoint", default=None, help="a checkpoint directory of the run (default: its last, checkpoints/step_*)")
    ev.add_argument("--seed", type=int, default=None, help="the evaluation episodes' seed (default: the run's seed + eval.seed_offset)")
    ev.add_argument("--explore", action="store_true", help="act as training does at the checkpoint's env step (sampled actions, DQN's epsilon then), not greedily")
    ev.add_argument("--json", action="store_true", help="print one JSON object (every episode's reward) instead of the table")
    ev.add_argument("--record", metavar="FILE", default=None, help="also draw one game of the trained policies, acting as the evaluation does, "
                    "into an animated GIF or WebP (e.g. run.gif; run.webp keeps every pixel, smaller than a GIF for MuJoCo's scenes)")
    ev.add_argument("--fps", type=float, default=20.0, help="frames per second of --record's animation")
    ev.set_defaults(func=cmd_eval)

    plot = sub.add_parser("plot", help="learning curves, mean +- std across seeds")
    plot.add_argument("runs", nargs="+", help="run directories (<seed>/) or experiment directories of seeds")
    plot.add_argument("--out", default="learning_curve.png")
    plot.add_argument("--key", default="episode_reward_mean")
    plot.add_argument("--bin", type=_at_least(1), help="bin size in env steps (default: the runs' report_interval; paper: 8000 in Pursuit)")
    plot.add_argument("--alpha", type=float, default=0.3, help="display smoothing; 0 = none")
    plot.add_argument("--rounds", action="store_true", help="the schemes' per-round tables (tournament Elo, PBT, self-play) instead")
    plot.set_defaults(func=cmd_plot)

    table = sub.add_parser("table", help="mean (std) across seeds at one step bin, as the paper's tables")
    table.add_argument("runs", nargs="+", help="experiment directories of seeds (or single run directories)")
    table.add_argument("--at", type=_at_least(0), required=True, help="env step; its bin is reported")
    table.add_argument("--bin", type=_at_least(1), help="bin size in env steps (default: the runs' report_interval)")
    table.set_defaults(func=cmd_table)

    quick = sub.add_parser("quickstart", help="a short SUPER run on a small Pursuit, evaluated against random")
    with_config_args(quick)
    quick.add_argument("--episodes", type=_at_least(1), default=20)
    quick.set_defaults(func=cmd_quickstart, seed=0)

    reproduce = sub.add_parser("reproduce", help="run a paper's experiment grid and write its tables and figures")
    reproduce.add_argument("paper", help="super, dase, accmer, arena or seac (relayrl list shows them)")
    reproduce.add_argument("--domains", nargs="+", help="super: pursuit, battle, adversarial-pursuit (default: all)")
    reproduce.add_argument("--tasks", nargs="+", help="dase: halfcheetah, swimmer, ant, lunarlander, ... (default: halfcheetah swimmer); seac: lbf-8x8-2p-2f-coop, spread, pursuit, ...")
    reproduce.add_argument("--settings", nargs="+", choices=["base", "hard", "hard10", "16", "32", "small"], help="accmer: Predator-Prey settings (default: base hard)")
    reproduce.add_argument("--examples", nargs="+", help="arena: curriculum, pbt, curriculum-pursuit, pbt-pursuit, pbt-pong, navigation, tournament, selfplay (default: all)")
    reproduce.add_argument("--algos", nargs="+", help="variants, e.g. ddqn super-quantile (default: the whole grid)")
    reproduce.add_argument("--seeds", type=_at_least(1), default=3)
    reproduce.add_argument("--steps", type=_at_least(1), help="env steps per run (default: super: the paper's per domain; dase: 300k per agent)")
    reproduce.add_argument("--jobs", type=_at_least(1), default=2, help="runs at a time (--threads cores each)")
    reproduce.add_argument(
        "--threads", type=_at_least(1), default=1,
        help="torch threads per run (default 1); --jobs x --threads cores in all. It is a runtime setting (a resume may "
             "change it); Battle's pretraining gave equal metrics on 1 and 2 (docs/results/super/README.md)",
    )
    reproduce.add_argument("--backend", choices=["processes", "ray"], default="processes")
    reproduce.add_argument("--out", default="runs", help="root of run directories")
    reproduce.add_argument("--results", help="where tables, figures and metric copies go (default: docs/results/<paper>)")
    reproduce.add_argument("--dry-run", action="store_true", help="list the jobs and their progress, run nothing")
    reproduce.add_argument("--report-only", action="store_true", help="collect metrics and write the report, run nothing")
    reproduce.add_argument("--scale-switch-from", metavar="RUN_DIR", help="also measure the gaussian scale switch on a trained run without sharing")
    reproduce.set_defaults(func=cmd_reproduce)

    bench = sub.add_parser("bench", help="speed benchmarks against named baselines; writes a markdown report")
    bench.add_argument("--quick", action="store_true", help="fewer rounds and steps (a few minutes)")
    bench.add_argument("--only", help="comma-separated subset of: replay, env, learner, loop, rllib, marl, marl-scaling")
    bench.add_argument("--threads", type=_at_least(1), default=1, help="torch intra-op threads (default 1, measured best here)")
    bench.add_argument("--out", help="also write the report there (the project's record: docs/results/benchmarks.md); default: print only")
    bench.add_argument("--rllib-python", help="python with ray[rllib] for the RLlib baseline (default ~/venvs/rllib)")
    bench.add_argument("--jaxmarl-python", help="marl: python with jax and JaxMARL's dependencies (benchmarks/README.md)")
    bench.add_argument("--jaxmarl-src", help="marl: a checkout of JaxMARL's repository (its baselines/ scripts are timed)")
    bench.add_argument("--device", default="auto", help="where the learners run: auto (CUDA where present), cpu or cuda")
    bench.set_defaults(func=cmd_bench)
    return parser


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None, line: str | None = None
) -> None:
    """relayrl's own warnings read as its errors do, ``warning: <message>``, each once (a config
    section is validated again for every policy that trains with it); others as Python prints them."""
    if issubclass(category, RelayRLWarning):
        if str(message) not in _shown:
            _shown.add(str(message))
            print(f"warning: {message}", file=sys.stderr if file is None else file)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning
_shown: set[str] = set()


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    if os.getcwd() not in sys.path and "" not in sys.path:  # the working directory's modules name envs (env.name: my_env), as under python -m
        sys.path.append(os.getcwd())
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # key=value overrides may also follow the options (train PRESET --seed 1 total_steps=N)
    late = [a for a in extra if "=" in a and not a.startswith("-")]
    if late and hasattr(args, "overrides"):
        args.overrides = [*args.overrides, *late]
        extra = [a for a in extra if a not in late]
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        args.func(args)
    except RelayRLError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of a pipe stopped early (relayrl show ... | head): nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that Python's exit flush does not fail again
        return 0
    except OSError as error:  # the file system refused: a path on the command line, a full disk
        where = f": {error.filename}" if error.filename else ""
        print(f"error: {error.strerror or error}{where} (check the paths given and the free disk space)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
