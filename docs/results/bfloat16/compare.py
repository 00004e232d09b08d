"""Learning with ``precision=bfloat16`` beside the kept float32 runs of the same configs and
seeds: a table of the last report's training return and the last greedy evaluation per
seed, and the curves (``learning.png``).

    python docs/results/bfloat16/compare.py
"""

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
RESULTS = HERE.parent
# name -> (float32 metrics per seed, bfloat16 metrics per seed)
CASES = {
    "spread MASAC (150k)": (RESULTS / "centralised/runs/spread_masac", HERE / "runs/spread_masac"),
    "spread MATD3 (150k)": (RESULTS / "centralised/runs/spread_matd3", HERE / "runs/spread_matd3"),
    "pursuit-ddqn (104k)": (RESULTS / "super/runs/pursuit-ddqn-d48a734f", HERE / "runs/pursuit-ddqn"),
}


def rows(path: Path, last_step: int | None = None) -> list[dict[str, float]]:
    with open(path) as f:
        out = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return [r for r in out if last_step is None or r["env_steps"] <= last_step]


def seeds(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.iterdir() if (p / "metrics.csv").exists())


def last_eval(run: list[dict[str, float]]) -> float:
    values = [r["eval_reward_mean"] for r in run if not math.isnan(r["eval_reward_mean"])]
    return values[-1] if values else math.nan


def mean_std(values: list[float]) -> str:
    m = sum(values) / len(values)
    return f"{m:.2f} ({math.sqrt(sum((v - m) ** 2 for v in values) / len(values)):.2f})"


def main() -> None:
    print("| run | precision | seeds | training return at the last report, per seed | mean (std) | last greedy evaluation, per seed | mean (std) |")
    print("|---|---|---|---|---:|---|---:|")
    fig, axes = plt.subplots(1, len(CASES), figsize=(5 * len(CASES), 3.6))
    for ax, (name, (full, low)) in zip(axes, CASES.items()):
        low_seeds = seeds(low)
        end = max(rows(low / str(s) / "metrics.csv")[-1]["env_steps"] for s in low_seeds)
        for precision, folder, colour in (("float32", full, "tab:blue"), ("bfloat16", low, "tab:orange")):
            runs = {s: rows(folder / str(s) / "metrics.csv", int(end)) for s in seeds(folder)}
            train = [run[-1]["episode_reward_mean"] for run in runs.values()]
            greedy = [last_eval(run) for run in runs.values()]
            print(f"| {name} | {precision} | {', '.join(map(str, runs))} | {', '.join(f'{v:.2f}' for v in train)} | {mean_std(train)} "
                  f"| {', '.join(f'{v:.2f}' for v in greedy)} | {mean_std(greedy)} |")
            for k, run in enumerate(runs.values()):
                ax.plot([r["env_steps"] for r in run], [r["episode_reward_mean"] for r in run], color=colour, alpha=0.8,
                        label=precision if k == 0 else None)
        ax.set_title(name)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1000:.0f}k")
        ax.set_xlabel("env steps")
        ax.set_ylabel("training return")
        ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "learning.png", dpi=110)


if __name__ == "__main__":
    main()
