"""Checkpoint size, save and load time of a Pursuit run with full replays (the SPEC's 8
pursuers x 120,000 transitions), the replays filled from the real environment.

    python benchmarks/checkpoint_io.py [--steps 120000] [--rounds 3] [--out DIR]

The run is pursuit-super-quantile with learning held off (``dqn.learning_starts`` beyond the
budget), so filling takes minutes, not hours; the networks' optimiser state is then what
a run has before its first update (Adam's moments appear with the first step, adding
about two networks' worth). Prints the checkpoint's files and sizes and the best of
``--rounds`` save and load times (save: ``Run.save``; load: a fresh Run resuming).
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from relayrl.experiment import build_run, apply_overrides, build_config, preset_dict
from relayrl.experiment.checkpoint import list_checkpoints


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=120_000, help="env steps of filling (the replay holds 120,000 per agent)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="where the run directory goes (default: a temporary folder)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp())
    overrides = [f"total_steps={args.steps}", f"dqn.learning_starts={args.steps + 1}", "eval.interval=0",
                 f"checkpoint_interval={args.steps}", "keep_checkpoints=1", "env.num_envs=16"]
    config = build_config(apply_overrides(preset_dict("pursuit-super-quantile"), overrides))
    run_dir = root / "run"
    start = time.perf_counter()
    run = build_run(config, run_dir, verbose=False)
    run.train()
    print(f"filled {args.steps:,} env steps in {time.perf_counter() - start:.0f} s; replay rows per agent: "
          f"{run.learners['pursuer'].replay.size.tolist()}")
    saves = []
    for _ in range(args.rounds):
        begin = time.perf_counter()
        run.save()
        saves.append(time.perf_counter() - begin)
    (checkpoint,) = list_checkpoints(run_dir / "checkpoints")
    files = {f.name: f.stat().st_size for f in sorted(checkpoint.iterdir())}
    run.close()
    loads = []
    for _ in range(args.rounds):
        fresh = build_run(config, run_dir, verbose=False)
        begin = time.perf_counter()
        fresh.resume_from_latest()
        loads.append(time.perf_counter() - begin)
        fresh.close()
    total = sum(files.values())
    print(f"checkpoint {checkpoint.name}: {total / 1e6:.1f} MB ({', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in files.items())})")
    print(f"save {min(saves):.2f} s, load {min(loads):.2f} s (best of {args.rounds})")
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
