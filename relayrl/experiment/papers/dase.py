"""``relayrl reproduce dase``: the DASE paper (paper 001), its run grid, Table 4 / Table 5
style tables with our numbers next to the paper's, learning curves and the DPS weights.

Scores are the paper's (appendix F): the average evaluation return over the last 10
evaluations (every 1000 steps, 10 episodes without noise), averaged over all agents of a
DASE run; then mean (std) across seeds. The paper's numbers are at 1M steps per agent on
MuJoCo v2; ours are at the step count the table names, on Gymnasium v5. Curves are the
mean +- half a standard deviation across seeds, smoothed over a sliding window of 25
evaluations (appendix C.7).
"""

import argparse
from pathlib import Path

import numpy as np

from relayrl.experiment.grid import Job
from relayrl.experiment.papers.common import draw_curve, final_rewards, no_studies, option_values, runs_of, seeds_cell, table_cell, write_tables
from relayrl.experiment.plots import pyplot, save_if_drawn
from relayrl.experiment.presets import load_preset
from relayrl.experiment.presets.dase import GYM_TASKS

NAME = "dase"
RESULTS = NAME
OPTIONS = frozenset({"tasks", "algos", "steps"})
REFUSAL = frozenset({"domains", "settings", "scale_switch_from"}), "--domains, --settings and --scale-switch-from belong to reproduce super and accmer; DASE takes --tasks"

TASKS = ("halfcheetah", "swimmer", "ant", "lunarlander")  # the tasks of Tables 4-5
DEFAULT_TASKS = ("halfcheetah", "swimmer")
CHOICES = {"tasks": tuple(GYM_TASKS)}
DEFAULT_STEPS = 300_000  # per agent: past the 25k random start and a full 100k replay
LAST_EVALUATIONS = 10
WINDOW = 25

# Paper 001, Tables 4 (replay 100k) and 5 (replay 1M): TD3 + DASE ablations at 1M steps, 10 seeds.
PAPER_TABLES: dict[str, dict[str, dict[str, float]]] = {
    "": {
        "dase-td3": {"ant": 5123.03, "halfcheetah": 12375.37, "lunarlander": 283.95, "swimmer": 144.28},
        "dase-td3-k5": {"ant": 5490.69, "halfcheetah": 12764.66, "lunarlander": 306.43, "swimmer": 155.38},
        "dase-td3-k10": {"ant": 5876.86, "halfcheetah": 13624.52, "lunarlander": 327.29, "swimmer": 164.64},
        "dase-td3-kl": {"ant": 4786.68, "halfcheetah": 11036.75, "lunarlander": 236.26, "swimmer": 119.42},
        "dase-td3-es": {"ant": 817.75, "halfcheetah": 8328.72, "lunarlander": -7.57, "swimmer": 65.63},
    },
    "-1m": {
        "dase-td3": {"ant": 5434.32, "halfcheetah": 12086.72, "lunarlander": 277.20, "swimmer": 93.81},
        "dase-td3-k5": {"ant": 5921.87, "halfcheetah": 12826.30, "lunarlander": 297.88, "swimmer": 100.43},
        "dase-td3-k10": {"ant": 6217.24, "halfcheetah": 13674.15, "lunarlander": 318.34, "swimmer": 107.22},
        "dase-td3-kl": {"ant": 5094.35, "halfcheetah": 11075.49, "lunarlander": 227.78, "swimmer": 77.25},
        "dase-td3-es": {"ant": 865.57, "halfcheetah": 8354.15, "lunarlander": 0.34, "swimmer": 64.17},
    },
}
# Rows of our tables: the paper's methods, then the single-agent baseline and our extra
# variants (the paper reports those as curves or not at all).
TABLE_ROWS: dict[str, str] = {
    "dase-td3": "DASE (K=2, sym_kl)",
    "dase-td3-k5": "DASE (K=5)",
    "dase-td3-k10": "DASE (K=10)",
    "dase-td3-kl": "KL-DASE",
    "dase-td3-es": "ES-DASE",
    "td3": "TD3 (single agent)",
    "dase-td3-jsd": "DASE (K=2, jsd)",
    "dase-td3-stdsq": "DASE (K=2, sym_kl, reference sigma^2 I)",
}


def grid(tasks: list[str], algos: list[str] | None, seeds: int, steps: int | None) -> list[Job]:
    """Jobs in the issue's order: (1) TD3 vs DASE-TD3 (K=2, 100k replay); (2) the ES-DASE
    ablation, on the first task only (the issue asks for it on one task); (3) the rest of
    Table 4 and our DPS variants; (4) DDPG and SAC with and without DASE; (5) the
    1M-replay runs of (1)."""
    tiers: list[tuple[list[str], bool]] = [  # (variants, on every task)
        (["td3", "dase-td3"], True),
        (["dase-td3-es"], False),
        (["dase-td3-kl", "dase-td3-jsd", "dase-td3-stdsq", "dase-td3-k5", "dase-td3-k10"], True),
        (["ddpg", "dase-ddpg", "sac", "dase-sac"], True),
        (["td3-1m", "dase-td3-1m"], True),
    ]
    jobs = []
    for tier, every_task in tiers:
        for seed in range(seeds):  # seed by seed: every comparison of a tier has data early
            for task in tasks if every_task else tasks[:1]:
                for variant in tier:
                    if algos is None or variant in algos:
                        jobs.append(Job(f"{task}-{variant}", seed, steps or DEFAULT_STEPS))
    return jobs


def _tasks(args: argparse.Namespace) -> list[str]:
    return option_values(args.tasks, GYM_TASKS, "task", DEFAULT_TASKS)


def jobs(args: argparse.Namespace) -> list[Job]:
    """The grid for ``relayrl reproduce dase``'s options."""
    return grid(_tasks(args), args.algos, args.seeds, args.steps)


def table(results: Path, buffer: str, tasks: tuple[str, ...], step: int, seeds: int) -> str:
    """Markdown table: per task the paper's score (1M steps) and ours at ``step``."""
    paper = PAPER_TABLES[buffer]
    header = "| method | " + " | ".join(f"{t} paper (1M) | {t} ours ({step // 1000}k)" for t in tasks) + " |"
    lines = [header, "|---|" + "---:|---:|" * len(tasks)]
    for variant, label in TABLE_ROWS.items():
        cells = []
        for task in tasks:
            reference = paper.get(variant, {}).get(task)
            cells.append(f"{reference:.2f}" if reference is not None else "-")
            runs = runs_of(f"{task}-{variant}{buffer}", results)
            cells.append(table_cell(final_rewards(runs, step, LAST_EVALUATIONS), runs, seeds))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def common_step_table(results: Path, tasks: tuple[str, ...], buffer: str = "") -> str | None:
    """While runs are short of the table's step count: per task, every variant with runs
    scored at the largest step each of them has reached with at least one seed, over the
    seeds that reached it (None when no task has two variants to compare)."""
    per_task = {}
    for task in tasks:
        runs = {v: [r for r in runs_of(f"{task}-{v}{buffer}", results) if r] for v in TABLE_ROWS}
        runs = {v: r for v, r in runs.items() if r}
        if len(runs) >= 2:
            per_task[task] = runs
    if not per_task:
        return None
    columns = [v for v in TABLE_ROWS if any(v in runs for runs in per_task.values())]
    lines = ["| task | step | " + " | ".join(TABLE_ROWS[v] for v in columns) + " |", "|---|---:|" + "---:|" * len(columns)]
    for task, runs in per_task.items():
        step = min(max(int(rows[-1]["env_steps"]) for rows in variant_runs) for variant_runs in runs.values()) // 1000 * 1000
        cells = []
        for variant in columns:
            values = final_rewards(runs.get(variant, []), step, LAST_EVALUATIONS)
            cells.append(seeds_cell(values) if values else "-")
        lines.append(f"| {task} | {step:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sliding(values: np.ndarray, window: int) -> np.ndarray:
    """Uniform sliding-window mean over the last ``window`` points (display only)."""
    cumulative = np.cumsum(np.insert(values, 0, 0.0))
    end = np.arange(1, len(values) + 1)
    start = np.maximum(0, end - window)
    return (cumulative[end] - cumulative[start]) / (end - start)


def curves(
    results: Path, out: Path, tasks: tuple[str, ...], variants: list[str], key: str, ylabel: str, title: str, log_y: bool = False
) -> Path | None:
    """One panel per task: mean +- half std across seeds of ``key`` for each variant,
    smoothed over 25 reports; ``log_y``: unsmoothed on a log scale (DPS weights span
    orders of magnitude)."""
    def display(mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (mean, std / 2) if log_y else (_sliding(mean, WINDOW), _sliding(std, WINDOW) / 2)

    plt = pyplot()
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.2), squeeze=False)
    drew = False
    for ax, task in zip(axes[0], tasks):
        for variant in variants:
            # every run reports at the same env steps, so a bin of one step keeps each report
            drew |= draw_curve(ax, runs_of(f"{task}-{variant}", results), key, TABLE_ROWS.get(variant, variant), display=display)
        ax.set_title(GYM_TASKS[task])
        ax.set_xlabel("environment steps per agent")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if log_y and ax.lines:
            ax.set_yscale("log")
        if ax.lines:
            ax.legend(fontsize=8)
    return save_if_drawn(plt, fig, out, drew, title)


def write_report(results: Path, tasks: tuple[str, ...], step: int, seeds: int) -> list[Path]:
    """Writes tables.md and the figures under ``results``; returns the files written."""
    results.mkdir(parents=True, exist_ok=True)
    figures = results / "figures"
    figures.mkdir(exist_ok=True)
    divergence = load_preset("halfcheetah-dase-td3").sharing.divergence
    text = [
        "# DASE reproduction: tables (generated by `relayrl reproduce dase`)",
        "",
        f"Score: mean of the last {LAST_EVALUATIONS} evaluations (10 episodes each, no noise) averaged over the agents, "
        "then mean (std) across seeds. The paper's scores are at 1M steps per agent over 10 seeds on MuJoCo v2; ours are "
        f"at the step count in the header on Gymnasium v5 (Box2D v3). DASE rows use DPS with `divergence: {divergence}` "
        "and the reference covariance sigma I (sigma = 0.1) unless the row says otherwise.",
        "",
        "## Table 4 style: shared replay of 100,000",
        "",
        table(results, "", tasks, step, seeds),
        "",
        "## Table 5 style: shared replay of 1,000,000",
        "",
        table(results, "-1m", tasks, step, seeds),
        "",
    ]
    common = common_step_table(results, tasks)
    if common is not None:
        text += [
            "## Where the runs stand (replay 100k)",
            "",
            "Every variant with runs, scored the same way at the largest step that every variant of the task has "
            "reached with at least one seed, over the seeds that reached it (the tables above wait for the full "
            "step count).",
            "",
            common,
            "",
        ]
    main = ["td3", "dase-td3", "dase-td3-es", "dase-td3-kl", "dase-td3-jsd", "dase-td3-stdsq", "dase-td3-k5", "dase-td3-k10"]
    return write_tables(results / "tables.md", text, (
        curves(results, figures / "learning_curves_100k.png", tasks, main, "eval_reward_mean", "evaluation return", "TD3 and DASE, replay 100k"),
        curves(results, figures / "learning_curves_1m.png", tasks, [f"{v}-1m" for v in main], "eval_reward_mean", "evaluation return", "TD3 and DASE, replay 1M"),
        curves(results, figures / "learning_curves_ddpg_sac.png", tasks, ["ddpg", "dase-ddpg", "sac", "dase-sac"], "eval_reward_mean", "evaluation return", "DDPG and SAC (deterministic actor) with and without DASE"),
        curves(results, figures / "dps_weights.png", tasks, [v for v in main if v.startswith("dase")], "dps_weight", "mean DPS weight of external transitions", "DPS weights during training", log_y=True),
    ))


studies = no_studies


def report(args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
    """``write_report`` for ``relayrl reproduce dase``'s options."""
    return write_report(results, tuple(_tasks(args)), args.steps or DEFAULT_STEPS, args.seeds), []
