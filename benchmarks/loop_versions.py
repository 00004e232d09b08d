"""The SUPER training loop of two checkouts of relayrl in one run: ``relayrl bench``'s loop
measurement (``relayrl.bench.loop.measure``: pursuit-super-quantile, a warm-up past
learning_starts, then a timed window) alternately from each checkout, ``--repeats`` times
each, and the ratio of their median env steps/s. Alternating keeps what else the machine
does the same for both.

    python benchmarks/loop_versions.py BEFORE_CHECKOUT AFTER_CHECKOUT [--repeats 5] [--steps 4000] [--envs 1 16]

Each checkout is imported from its own folder (``python -c`` run there), with the Python
running this script; the two must need the same packages.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

MEASURE = """
import json
from relayrl.bench import loop
r = loop.measure("pursuit-super-quantile", ["env.num_envs={envs}", "torch_threads=1"], {steps}, "")
print(json.dumps({{"sps": r.env_steps_per_s, "ups": r.updates_per_s}}))
"""


def measure(checkout: Path, envs: int, steps: int) -> dict[str, float]:
    code = MEASURE.format(envs=envs, steps=steps)
    out = subprocess.run([sys.executable, "-c", code], cwd=checkout, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    print(f"| E | before env steps/s (median of {args.repeats}) | after | after / before | per-pair ratios |")
    print("|---:|---:|---:|---:|---|")
    for envs in args.envs:
        before, after = [], []
        for _ in range(args.repeats):
            before.append(measure(args.before, envs, args.steps)["sps"])
            after.append(measure(args.after, envs, args.steps)["sps"])
        pairs = ", ".join(f"{a / b:.3f}" for a, b in zip(after, before))
        b, a = statistics.median(before), statistics.median(after)
        print(f"| {envs} | {b:,.1f} | {a:,.1f} | {a / b:.3f} | {pairs} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
