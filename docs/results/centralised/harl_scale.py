"""relayrl's MATD3 at HARL's settings on continuous spread, drawn on HARL's scale:
``figures/spread_matd3_harl_scale.png``.

    python docs/results/centralised/harl_scale.py

Greedy evaluations (40 games every 50k env steps) of seed 0 of
- ``runs/spread_matd3_pettingzoo_1_22``: one team critic, on ``simple-spread`` stepped as
  PettingZoo 1.22.2 (the release HARL ran), so its returns are on HARL's scale;
- ``runs/spread_continuous_matd3_common`` and ``runs/spread_continuous_matd3``: the team
  critic and a critic per agent, on mpe2's step, with the self-collision constant PettingZoo
  1.22.2 adds (-37.5 a game) added, dashed: their physics are not HARL's;
beside HARL's MATD3 as read off its README figure (``assets/mpe_learning_curve.jpg``,
"Spread (continuous)"; values read by eye, about -67 at 1.4M and -63.5 at 5M env steps).
"""

import csv
from pathlib import Path

HERE = Path(__file__).parent
SELF_COLLISION = -37.5
RUNS = [
    ("spread_matd3_pettingzoo_1_22", "relayrl, team critic, PettingZoo 1.22.2's step", 0.0, "-"),
    ("spread_continuous_matd3_common", "relayrl, team critic, mpe2's step - 37.5", SELF_COLLISION, "--"),
    ("spread_continuous_matd3", "relayrl, a critic per agent, mpe2's step - 37.5", SELF_COLLISION, ":"),
]
HARL_READ = [(1.4e6, -67.0), (5e6, -63.5)]


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

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for run, label, shift, style in RUNS:
        steps, values = greedy(run)
        ax.plot(steps, [v + shift for v in values], style, label=label)
    ax.plot(*zip(*HARL_READ), "ko", label="HARL's MATD3, read off its README figure")
    ax.set_xlabel("env steps")
    ax.set_ylabel("team return, HARL's scale (greedy)")
    ax.set_ylim(-110, -55)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("MATD3 on continuous simple_spread at HARL's settings (seed 0)")
    out = HERE / "figures" / "spread_matd3_harl_scale.png"
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
