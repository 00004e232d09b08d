"""When cooperative-navigation runs first reach given greedy returns, and where they stand.

    python docs/results/centralised/navigation_milestones.py RUN_DIR [RUN_DIR ...] [--marks 300 600 800]

Reads each run's ``metrics.csv``: its last env step, its training return (the mean of the
reports over its last 100k env steps), its last three greedy evaluations, and the first env
step at which a greedy evaluation reached each mark (``-`` where none has yet).
"""

import argparse
import csv
import math
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--marks", nargs="+", type=float, default=[300.0, 600.0, 800.0])
    args = parser.parse_args()
    print("| run | env steps | training (last 100k) | greedy, last three | " + " | ".join(f"first greedy >= {m:g}" for m in args.marks) + " |")
    print("|---|---:|---:|---|" + "---:|" * len(args.marks))
    for run in args.runs:
        with open(run / "metrics.csv") as file:
            rows = [(int(r["env_steps"]), float(r["episode_reward_mean"]), float(r["eval_reward_mean"])) for r in csv.DictReader(file)]
        last = rows[-1][0]
        training = [r for s, r, _ in rows if s > last - 100_000 and not math.isnan(r)]
        evals = [(s, e) for s, _, e in rows if not math.isnan(e)]
        firsts = [next((f"{s:,}" for s, e in evals if e >= mark), "-") for mark in args.marks]
        greedy = ", ".join(f"{e:.1f}" for _, e in evals[-3:])
        print(f"| {run} | {last:,} | {sum(training) / len(training):.1f} | {greedy} | " + " | ".join(firsts) + " |")


if __name__ == "__main__":
    main()
