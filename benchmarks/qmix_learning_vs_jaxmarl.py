"""Greedy return of relayrl's QMIX and of JaxMARL's own QMIX, trained at the same settings on
MPE simple_spread: the table and figure of ``docs/results/mpe_spread/README.md``.

Inputs (both in ``docs/results/mpe_spread``): relayrl's ``metrics.csv`` of
``relayrl train spread-qmix-jaxmarl total_steps=1000000 ...`` and JaxMARL's curve of
``benchmarks/jaxmarl_timing.py --algo qmix --steps 1e6 --test-during-training --set
EPS_DECAY=1.0 --set LR_LINEAR_DECAY=false --curve FILE`` (its epsilon then falls over the
same first 1M env steps as relayrl's preset and its learning rate stays constant, as
relayrl's). Both report the team's return, summed over the 3 agents.

    python benchmarks/qmix_learning_vs_jaxmarl.py [--results docs/results/mpe_spread]
"""

import argparse
import csv
from pathlib import Path

import numpy as np

STEPS = (100_000, 200_000, 400_000, 600_000, 800_000, 1_000_000)


def curves(results: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Env steps and greedy return: relayrl's evaluations, JaxMARL's greedy tests (each
    value held until the next test, so only its changes are kept)."""
    ours = [r for r in csv.DictReader(open(results / "spread-qmix-jaxmarl-s0.csv")) if r["eval_reward_mean"] not in ("", "nan")]
    theirs = list(csv.DictReader(open(results / "jaxmarl-qmix-s0.csv")))
    test = np.array([float(r["test_returned_episode_returns"]) for r in theirs])
    fresh = np.r_[True, test[1:] != test[:-1]]
    return {
        "relayrl (32 greedy episodes)": (np.array([float(r["env_steps"]) for r in ours]), np.array([float(r["eval_reward_mean"]) for r in ours])),
        "JaxMARL (512 greedy episodes)": (np.array([float(r["env_step"]) for r in theirs])[fresh], test[fresh]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="docs/results/mpe_spread")
    results = Path(parser.parse_args().results)
    found = curves(results)
    print("| env steps | " + " | ".join(found) + " |")
    print("|---:|" + "---:|" * len(found))
    for step in STEPS:  # the latest greedy figure at or before each step
        cells = [f"{values[steps <= step][-1]:.1f}" if (steps <= step).any() else "-" for steps, values in found.values()]
        print(f"| {step:,} | " + " | ".join(cells) + " |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, (steps, values) in found.items():
        ax.plot(steps, values, marker="o", markersize=3, label=label)
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy team return")
    ax.set_title("QMIX at JaxMARL's ql_rnn_mpe settings, simple_spread, seed 0")
    ax.legend()
    fig.tight_layout()
    fig.savefig(results / "qmix_vs_jaxmarl.png", dpi=120)
    print(f"wrote {results / 'qmix_vs_jaxmarl.png'}")


if __name__ == "__main__":
    main()
