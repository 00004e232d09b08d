"""relayrl's QMIX and MAPPO against JaxMARL's own, trained at the same settings on MPE
simple_spread: the tables and figures of ``docs/results/mpe_spread/README.md``.

Inputs (in ``docs/results/mpe_spread``): relayrl's ``metrics.csv`` of ``relayrl train
spread-<algo>-jaxmarl total_steps=1000000 ...`` (``spread-<algo>-jaxmarl-s0.csv``) and
JaxMARL's curve of ``benchmarks/jaxmarl_timing.py --algo <algo> --steps 1e6 --curve FILE``
(``jaxmarl-<algo>-s0.csv``, and its record ``jaxmarl-<algo>-s0.json``); QMIX's with ``--test-during-training --set EPS_DECAY=1.0 --set
LR_LINEAR_DECAY=false``, so that its epsilon falls over the same first 1M env steps as
relayrl's preset and its learning rate stays constant, as relayrl's. Both report the
team's return, summed over the 3 agents. QMIX is compared by its greedy return (relayrl's
evaluations, JaxMARL's greedy tests), MAPPO by its training episodes' return (JaxMARL's
MAPPO has no greedy test), both averaged over relayrl's report interval.

    python benchmarks/learning_vs_jaxmarl.py --algo qmix|mappo [--results docs/results/mpe_spread]
"""

import argparse
import csv
import json
from pathlib import Path

import numpy as np

STEPS = (100_000, 200_000, 400_000, 600_000, 800_000, 1_000_000)


def _read(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def curves(results: Path, algo: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Env steps and return per point of each curve."""
    ours = _read(results / f"spread-{algo}-jaxmarl-s0.csv")
    theirs = _read(results / f"jaxmarl-{algo}-s0.csv")
    steps = np.array([float(r["env_step"]) for r in theirs])
    if algo == "qmix":  # greedy: each JaxMARL test is held until the next, so only its changes are kept
        ours = [r for r in ours if r["eval_reward_mean"] not in ("", "nan")]
        test = np.array([float(r["test_returned_episode_returns"]) for r in theirs])
        fresh = np.r_[True, test[1:] != test[:-1]]
        return {
            "relayrl (32 greedy episodes)": (np.array([float(r["env_steps"]) for r in ours]), np.array([float(r["eval_reward_mean"]) for r in ours])),
            "JaxMARL (512 greedy episodes)": (steps[fresh], test[fresh]),
        }
    # training episodes: JaxMARL's per-iteration figure averaged over each of relayrl's report
    # intervals; its MAPPO logs the env steps before the iteration's rollout, so one rollout is added
    config = json.loads((results / f"jaxmarl-{algo}-s0.json").read_text())["config"]
    steps = steps + config["NUM_ENVS"] * config["NUM_STEPS"]
    ends = np.array([float(r["env_steps"]) for r in ours])
    returns = np.array([float(r["returns"]) for r in theirs])
    starts = np.r_[0.0, ends[:-1]]
    binned = np.array([returns[(steps > a) & (steps <= b)].mean() if ((steps > a) & (steps <= b)).any() else np.nan for a, b in zip(starts, ends)])
    return {
        "relayrl (training episodes)": (ends, np.array([float(r["episode_reward_mean"]) for r in ours])),
        "JaxMARL (training episodes)": (ends, binned),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=("qmix", "mappo"), required=True)
    parser.add_argument("--results", default="docs/results/mpe_spread")
    args = parser.parse_args()
    results = Path(args.results)
    found = curves(results, args.algo)
    print("| env steps | " + " | ".join(found) + " |")
    print("|---:|" + "---:|" * len(found))
    for step in STEPS:  # the latest figure at or before each step
        cells = [f"{values[(steps <= step) & ~np.isnan(values)][-1]:.1f}" if ((steps <= step) & ~np.isnan(values)).any() else "-" for steps, values in found.values()]
        print(f"| {step:,} | " + " | ".join(cells) + " |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, (steps, values) in found.items():
        ax.plot(steps, values, marker="o", markersize=3, label=label)
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy team return" if args.algo == "qmix" else "training team return")
    ax.set_title(f"{args.algo.upper()} at JaxMARL's MPE settings, simple_spread, seed 0")
    ax.legend()
    fig.tight_layout()
    out = results / f"{args.algo}_vs_jaxmarl.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
