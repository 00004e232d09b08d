"""Same numbers deep into a run: two copies of a run's newest checkpoint, each resumed for
the same env steps by a different relayrl checkout, then their metrics (every column but
the wall-clock ones) and final weights (``policy.safetensors``) compared.

    python benchmarks/resumed_same_numbers.py RUN_DIR --steps N --before CHECKOUT --after CHECKOUT [--work DIR]

``same_numbers.py`` compares short runs from scratch; a change that only acts on a trained
state (Adam's moments decayed to subnormals, say) needs this one. The copies link the
checkpoint's files (nothing of RUN_DIR is written) and train at normal priority; each
side's last report gives its env steps/s.
"""

import argparse
import csv
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from same_numbers import WALL_CLOCK


def _copy(run_dir: Path, checkpoint: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for name in ("config.yaml", "metrics.csv", "provenance.yaml"):
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, target / name)
    shutil.copytree(checkpoint, target / "checkpoints" / checkpoint.name, copy_function=os.link)


def _metrics(run: Path) -> list[dict[str, str]]:
    with (run / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--before", type=Path, required=True, help="the relayrl checkout of the code before the change")
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=None, help="where the copies train (default: a temporary folder)")
    args = parser.parse_args()
    checkpoint = sorted((args.run_dir / "checkpoints").glob("step_*"))[-1]
    at = int(checkpoint.name.split("_")[1])
    work = args.work or Path(tempfile.mkdtemp(prefix="resumed_same_numbers_"))
    print(f"{checkpoint} ({at:,} env steps), {args.steps:,} more on each side, in {work}")
    runs = {}
    for side, checkout in (("before", args.before), ("after", args.after)):
        runs[side] = work / side / "0"
        _copy(args.run_dir, checkpoint, runs[side])
        revision = subprocess.run(["git", "log", "--oneline", "-1"], cwd=checkout, capture_output=True, text=True).stdout.strip()
        cmd = [sys.executable, "-m", "relayrl.cli", "resume", str(runs[side]), f"total_steps={at + args.steps}",
               f"checkpoint_interval={at + args.steps}"]
        subprocess.run(cmd, cwd=checkout, check=True, stdout=subprocess.DEVNULL)
        last = _metrics(runs[side])[-1]
        print(f"{side}: {revision[:70]}; last report at {int(last['env_steps']):,}: {float(last['sps']):.1f} env steps/s")
    rows = {side: [{k: v for k, v in row.items() if k not in WALL_CLOCK} for row in _metrics(run)] for side, run in runs.items()}
    weights = {side: hashlib.sha256((sorted((run / "checkpoints").glob("step_*"))[-1] / "policy.safetensors").read_bytes()).hexdigest()
               for side, run in runs.items()}
    same_metrics, same_weights = rows["before"] == rows["after"], weights["before"] == weights["after"]
    print(f"metrics ({len(rows['before'])} rows): {'identical' if same_metrics else 'DIFFERENT'}; "
          f"final weights: {'equal to the bit' if same_weights else 'DIFFERENT'}")
    return 0 if same_metrics and same_weights else 1


if __name__ == "__main__":
    sys.exit(main())
