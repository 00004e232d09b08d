"""relayrl's MATD3, MADDPG and MASAC at HARL's settings on continuous spread, drawn on HARL's
scale: ``figures/spread_{matd3,maddpg,masac}_harl_scale.png``.

    python docs/results/centralised/harl_scale.py

Greedy evaluations (40 games every 50k env steps) of
- ``runs/spread_{matd3,maddpg,masac}_pettingzoo_1_22``: one team critic, on ``simple-spread``
  stepped as PettingZoo 1.22.2 (the release HARL ran), so its returns are on HARL's scale;
  every seed kept (``<seed>/``), and their mean where there are several;
- ``runs/spread_continuous_matd3_common`` and ``runs/spread_continuous_matd3`` (seed 0): the team
  critic and a critic per agent, on mpe2's step, with the self-collision constant PettingZoo
  1.22.2 adds (-37.5 a game) added, dashed: their physics are not HARL's;
beside HARL's curves read off its README figure by pixel colour (``harl_figure_read.py`` on
``assets/mpe_learning_curve.jpg``, "Spread (continuous)", the mean over its seeds;
PKU-MARL/HARL at d539bad; that figure has no MASAC, so MASAC's is drawn beside HARL's MADDPG
and MATD3). It also prints,
per run on HARL's release, each seed's greedy return at HARL's milestones and its mean over
the evaluations past 4.5M env steps, with the mean (std) over seeds.
"""

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SELF_COLLISION = -37.5
FIGURES = {
    "matd3": [
        ("spread_matd3_pettingzoo_1_22", "relayrl, team critic, PettingZoo 1.22.2's step", 0.0, "-"),
        ("spread_continuous_matd3_common", "relayrl, team critic, mpe2's step - 37.5", SELF_COLLISION, "--"),
        ("spread_continuous_matd3", "relayrl, a critic per agent, mpe2's step - 37.5", SELF_COLLISION, ":"),
    ],
    "maddpg": [
        ("spread_maddpg_pettingzoo_1_22", "relayrl, team critic, PettingZoo 1.22.2's step", 0.0, "-"),
    ],
    "masac": [
        ("spread_masac_pettingzoo_1_22", "relayrl, team critic, PettingZoo 1.22.2's step", 0.0, "-"),
    ],
}
# (env steps, team return) off HARL's figure: ``harl_figure_read.py``'s mean over each window
# (0.45-0.55M, 0.95-1.05M, 1.9-2.1M, 2.9-3.1M, 4.5-5M) at the window's centre
HARL_READ = {
    "matd3": [(0.5e6, -72.5), (1e6, -69.2), (2e6, -65.2), (3e6, -64.4), (4.75e6, -63.3)],
    "maddpg": [(0.5e6, -79.7), (1e6, -76.2), (2e6, -67.4), (3e6, -65.8), (4.75e6, -64.9)],
}
REFERENCES = {"matd3": ("matd3",), "maddpg": ("maddpg",), "masac": ("maddpg", "matd3")}  # HARL's curves drawn beside each


MILESTONES = (0.5e6, 1e6, 2e6, 5e6)
LATE = 4.5e6  # the final stretch averaged per seed


def seeds(run: str) -> list[str]:
    """The seeds kept of ``run`` (``<seed>/``; an archived partial run such as ``0-2026-12-01``
    is not one)."""
    return sorted((d.name for d in (HERE / "runs" / run).iterdir() if d.name.isdigit()), key=int)


def greedy(run: str, seed: str = "0") -> tuple[list[float], list[float]]:
    steps, values = [], []
    with (HERE / "runs" / run / seed / "metrics.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["eval_reward_mean"] not in ("", "nan"):
                steps.append(float(row["env_steps"]))
                values.append(float(row["eval_reward_mean"]))
    return steps, values


def summary(run: str) -> str:
    """Each seed's greedy return at ``MILESTONES`` and its mean past ``LATE``, and the mean (std) over seeds."""
    lines = [f"{run}: greedy return at " + ", ".join(f"{m / 1e6:g}M" for m in MILESTONES) + f"; mean past {LATE / 1e6:g}M"]
    late = []
    for seed in seeds(run):
        steps, values = greedy(run, seed)
        at = [dict(zip(steps, values)).get(m) for m in MILESTONES]
        past = [v for s, v in zip(steps, values) if s > LATE]
        late.append(np.mean(past) if past else np.nan)
        lines.append(f"  seed {seed} (to {steps[-1] / 1e6:g}M): " + ", ".join("-" if v is None else f"{v:.1f}" for v in at) + f"; {late[-1]:.1f}")
    done = [v for v in late if np.isfinite(v)]
    if len(done) > 1:
        lines.append(f"  mean past {LATE / 1e6:g}M over {len(done)} seeds: {np.mean(done):.1f} ({np.std(done):.1f})")
    return "\n".join(lines)


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for algo, runs in FIGURES.items():
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for run, label, shift, style in runs:
            kept = seeds(run)
            curves = [greedy(run, seed) for seed in kept]
            if len(kept) == 1:
                steps, values = curves[0]
                ax.plot(steps, [v + shift for v in values], style, label=f"{label} (seed {kept[0]})")
                continue
            length = min(len(steps) for steps, _ in curves)  # the steps all seeds have reached
            mean = np.mean([values[:length] for _, values in curves], axis=0)
            (line,) = ax.plot(curves[0][0][:length], mean + shift, style, linewidth=2, label=f"{label} (mean of seeds {', '.join(kept)}; thin: each)")
            for steps, values in curves:
                ax.plot(steps, [v + shift for v in values], style, color=line.get_color(), linewidth=0.7, alpha=0.5)
        for reference, marker in zip(REFERENCES[algo], ("ko", "ks")):
            ax.plot(*zip(*HARL_READ[reference]), marker, label=f"HARL's {reference.upper()}, read off its README figure (harl_figure_read.py)")
        ax.set_xlabel("env steps")
        ax.set_ylabel("team return, HARL's scale (greedy)")
        ax.set_ylim(-110, -55)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"{algo.upper()} on continuous simple_spread at HARL's settings")
        out = HERE / "figures" / f"spread_{algo}_harl_scale.png"
        fig.tight_layout()
        fig.savefig(out, dpi=120)
        plt.close(fig)
        print(f"wrote {out}")
        print(summary(runs[0][0]))


if __name__ == "__main__":
    main()
