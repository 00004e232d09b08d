"""When cooperative-navigation runs first reach given greedy returns, and where they stand.

    python docs/results/centralised/navigation_milestones.py RUN_DIR [RUN_DIR ...] [--marks 300 600 800]

Reads each run's ``metrics.csv``: its last env step, its training return (the mean of the
reports over its last 100k env steps), its last three greedy evaluations, and the first env
step at which a greedy evaluation reached each mark (``-`` where none has yet).
"""

import argparse
import math
from pathlib import Path

from relayrl.experiment.metrics import read_metrics
from relayrl.experiment.papers.common import first_reaching


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--marks", nargs="+", type=float, default=[300.0, 600.0, 800.0])
    args = parser.parse_args()
    print("| run | env steps | training (last 100k) | greedy, last three | " + " | ".join(f"first greedy >= {m:g}" for m in args.marks) + " |")
    print("|---|---:|---:|---|" + "---:|" * len(args.marks))
    for run in args.runs:
        rows = read_metrics(run)
        last = int(rows[-1]["env_steps"])
        training = [r["episode_reward_mean"] for r in rows if r["env_steps"] > last - 100_000 and not math.isnan(r["episode_reward_mean"])]
        firsts = [f"{s:,}" if (s := first_reaching(rows, mark)) is not None else "-" for mark in args.marks]
        greedy = ", ".join(f"{e:.1f}" for e in [r["eval_reward_mean"] for r in rows if not math.isnan(r["eval_reward_mean"])][-3:])
        print(f"| {run} | {last:,} | {sum(training) / len(training):.1f} | {greedy} | " + " | ".join(firsts) + " |")


if __name__ == "__main__":
    main()
