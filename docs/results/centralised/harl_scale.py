"""relayrl's MATD3 and MADDPG at HARL's settings on continuous spread, drawn on HARL's
scale: ``figures/spread_matd3_harl_scale.png`` (MATD3) and
``figures/spread_maddpg_harl_scale.png`` (MADDPG).

    python docs/results/centralised/harl_scale.py

Greedy evaluations (40 games every 50k env steps) of seed 0 of
- ``runs/spread_{matd3,maddpg}_pettingzoo_1_22``: one team critic, on ``simple-spread``
  stepped as PettingZoo 1.22.2 (the release HARL ran), so its returns are on HARL's scale;
- ``runs/spread_continuous_matd3_common`` and ``runs/spread_continuous_matd3``: the team
  critic and a critic per agent, on mpe2's step, with the self-collision constant PettingZoo
  1.22.2 adds (-37.5 a game) added, dashed: their physics are not HARL's;
beside HARL's curves as read by eye off its README figure (``assets/mpe_learning_curve.jpg``,
"Spread (continuous)", the mean over its seeds; PKU-MARL/HARL at d539bad).
"""

import csv
from pathlib import Path

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
}
# (env steps, team return) read by eye off HARL's figure
HARL_READ = {
    "matd3": [(0.5e6, -72.0), (1e6, -70.0), (1.4e6, -67.0), (2e6, -65.5), (5e6, -63.5)],
    "maddpg": [(0.5e6, -80.0), (1e6, -76.0), (2e6, -67.5), (3e6, -66.0), (5e6, -64.0)],
}


def greedy(run: str) -> tuple[list[float], list[float]]:
    steps, values = [], []
    with (HERE / "runs" / run / "0" / "metrics.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["eval_reward_mean"] not in ("", "nan"):
                steps.append(float(row["env_steps"]))
                values.append(float(row["eval_reward_mean"]))
    return steps, values


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for algo, runs in FIGURES.items():
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for run, label, shift, style in runs:
            steps, values = greedy(run)
            ax.plot(steps, [v + shift for v in values], style, label=label)
        ax.plot(*zip(*HARL_READ[algo]), "ko", label=f"HARL's {algo.upper()}, read off its README figure")
        ax.set_xlabel("env steps")
        ax.set_ylabel("team return, HARL's scale (greedy)")
        ax.set_ylim(-110, -55)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"{algo.upper()} on continuous simple_spread at HARL's settings (seed 0)")
        out = HERE / "figures" / f"spread_{algo}_harl_scale.png"
        fig.tight_layout()
        fig.savefig(out, dpi=120)
        plt.close(fig)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
