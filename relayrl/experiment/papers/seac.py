"""``relayrl reproduce seac``: SEAC against independent A2C (Christianos et al. 2020) on
Level-Based Foraging and the multi-robot warehouse, SEAC with SUPER's selection at 10% and
1% bandwidth (ours), IPPO and MAPPO on the same tasks and on MPE's cooperative navigation,
and SEAC on SUPER's Pursuit (Table 1's SEAC row). Results go to docs/results/policy_gradient.

Scores are episode returns summed over the agents (LBF: the food's
levels collected, normalised so that all of it sums to 1; RWARE: shelves delivered; MPE:
the sum of the three agents' rewards over 25 steps): of the greedy evaluations (the
policy's most likely actions) and of the training episodes (its sampled actions, what SEAC's
paper plots), each the mean of the last 5 at the step all seeds reached, then mean (std)
across seeds. Curves: mean and std across seeds of both.
"""

import argparse
import math
from pathlib import Path

import numpy as np

from relayrl.experiment.grid import Job
from relayrl.experiment.papers.common import draw_curve, final_rewards, no_studies, option_values, runs_of, table_cell, write_tables
from relayrl.experiment.plots import pyplot, save_if_drawn
from relayrl.experiment.presets.policy_gradient import PG_TASKS, PG_VARIANTS

NAME = "seac"
RESULTS = "policy_gradient"
OPTIONS = frozenset({"tasks", "algos", "steps"})
REFUSAL = frozenset({"domains", "settings", "examples", "scale_switch_from"}), "--domains, --settings, --examples and --scale-switch-from belong to other papers; SEAC takes --tasks and --algos"

TASKS = (*PG_TASKS, "spread", "pursuit")
DEFAULT_TASKS = ("lbf-8x8-2p-2f-coop",)
VARIANTS = {"spread": ("ippo", "mappo"), "pursuit": ("ia2c", "seac")}  # the others: every PG_VARIANTS entry
DEFAULT_ALGOS = ("ia2c", "seac", "seac-q10", "seac-q01")
LAST_EVALUATIONS = 5
LABELS = {
    "ia2c": "IA2C", "seac": "SEAC", "seac-q10": "SEAC, quantile 10%", "seac-q01": "SEAC, quantile 1%", "ippo": "IPPO", "mappo": "MAPPO",
}
CHOICES = {"tasks": TASKS, "algos": tuple(LABELS)}


def _variants(task: str, algos: list[str] | None) -> list[str]:
    known = VARIANTS.get(task, tuple(PG_VARIANTS))
    wanted = algos if algos is not None else DEFAULT_ALGOS if task not in VARIANTS else known
    return [v for v in known if v in wanted]


def grid(tasks: list[str], algos: list[str] | None, seeds: int, steps: int | None) -> list[Job]:
    """Seed by seed (every comparison has data early), task by task."""
    from relayrl.experiment.presets import load_preset

    jobs = []
    for seed in range(seeds):
        for task in tasks:
            for variant in _variants(task, algos):
                preset = f"{task}-{variant}"
                jobs.append(Job(preset, seed, steps or load_preset(preset).total_steps))
    return jobs


def _tasks(args: argparse.Namespace) -> list[str]:
    return option_values(args.tasks, TASKS, "task", DEFAULT_TASKS)


def jobs(args: argparse.Namespace) -> list[Job]:
    return grid(_tasks(args), args.algos, args.seeds, args.steps)


def table(results: Path, tasks: list[str], algos: list[str] | None, seeds: int) -> str:
    """Per task and variant: the mean of the last evaluations at the furthest step a seed has
    reached, across the seeds that reached it (a seed started later, on a new machine or after
    the others, does not pull the cell back to its step: the cell counts its seeds)."""
    lines = ["| task | variant | greedy evaluation return | training episode return | env steps |", "|---|---|---:|---:|---:|"]
    for task in tasks:
        for variant in _variants(task, algos):
            runs = runs_of(f"{task}-{variant}", results)
            reached = max((int(r[-1]["env_steps"]) for r in runs if r), default=0)
            furthest = [r for r in runs if r and r[-1]["env_steps"] >= reached]
            values = final_rewards(furthest, reached, LAST_EVALUATIONS, partial=True) if reached else []
            training = [training_return(r, reached) for r in furthest] if reached else []
            cells = [table_cell(v, runs, seeds) for v in (values, [t for t in training if not math.isnan(t)])]
            lines.append(f"| {task} | {LABELS[variant]} | {cells[0]} | {cells[1]} | {reached:,} |")
    return "\n".join(lines)


def training_return(rows: list[dict[str, float]], step: int) -> float:
    """The mean episode return of the last ``LAST_EVALUATIONS`` reports up to ``step``, as the
    policy acted while it learned (sampling its actions: what SEAC's paper plots)."""
    values = [r["episode_reward_mean"] for r in rows if r["env_steps"] <= step and not math.isnan(r["episode_reward_mean"])]
    return float(np.mean(values[-LAST_EVALUATIONS:])) if values else math.nan


def curves(results: Path, out: Path, tasks: list[str], algos: list[str] | None) -> Path | None:
    plt = pyplot()
    keys = {"eval_reward_mean": "greedy evaluation return", "episode_reward_mean": "training episode return"}
    fig, axes = plt.subplots(len(keys), len(tasks), figsize=(6 * len(tasks), 4.2 * len(keys)), squeeze=False)
    drew = False
    for row, (key, label) in zip(axes, keys.items()):
        for ax, task in zip(row, tasks):
            for variant in _variants(task, algos):
                drew |= draw_curve(ax, runs_of(f"{task}-{variant}", results), key, LABELS[variant])
            ax.set_title(task)
            ax.set_xlabel("environment steps")
            ax.set_ylabel(f"{label} (summed over agents)")
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8)
    return save_if_drawn(plt, fig, out, drew, "SEAC, IA2C, SEAC with selection, IPPO and MAPPO")


studies = no_studies


def report(args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
    tasks = _tasks(args)
    results.mkdir(parents=True, exist_ok=True)
    (results / "figures").mkdir(exist_ok=True)
    text = [
        "# Policy gradients: SEAC, IA2C, SEAC with selection, IPPO, MAPPO (generated by `relayrl reproduce seac`)",
        "",
        f"Returns summed over the agents: the mean of the last {LAST_EVALUATIONS} greedy evaluations (most likely actions) and of "
        f"the last {LAST_EVALUATIONS} reports' training episodes (sampled actions) of each run at the step all its seeds reached, "
        "then mean (std) across seeds.",
        "",
        table(results, tasks, args.algos, args.seeds),
        "",
    ]
    return write_tables(results / "tables.md", text, (curves(results, results / "figures" / "learning_curves.png", tasks, args.algos),)), []
