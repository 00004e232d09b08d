"""``relayrl reproduce accmer``: AccMER and MAC-PO against QMIX on Predator-Prey (papers 002
and 003), the run grid, reward curves in the style of paper 002's Figs. 3 and 5, the final
rewards, and the end-to-end training time of AccMER against MAC-PO (Figs. 4 and 6) with the
share of it spent sampling the replay.

Rewards are the team's summed reward per episode (a stag is worth 1, so 8 is the best with 8
stags): the greedy evaluation (32 episodes every 10k env steps) and the training episodes'
mean. Times are the runs' own wall clocks (``wall_s``) at the largest env step both runs of a
pair reached, seed by seed.
"""

import argparse
import math
from pathlib import Path

import numpy as np

from relayrl.experiment.grid import Job
from relayrl.experiment.papers.common import draw_curve, final_rewards, no_studies, option_values, runs_of, seeds_cell, table_cell, write_tables
from relayrl.experiment.plots import mean_std, pyplot, save_if_drawn

NAME = "accmer"
RESULTS = NAME
OPTIONS = frozenset({"settings", "algos", "steps"})
REFUSAL = frozenset({"domains", "tasks", "scale_switch_from"}), "--domains, --tasks and --scale-switch-from are options of reproduce super and dase; AccMER takes --settings"

SETTINGS = {
    "": "8 predators, no punishment",
    "-hard": "8 predators, miscapture -1.5",
    "-hard10": "8 predators, miscapture -1.5, stag 10",
    "-16": "16 predators",
    "-32": "32 predators",
    "-small": "4 predators, 2 stags, 5x5 (ours)",
}
DEFAULT_SETTINGS = ("", "-hard")
CHOICES = {"settings": tuple(s.removeprefix("-") or "base" for s in SETTINGS)}
ALGOS = ("qmix", "macpo", "accmer", "vdn", "iql")
DEFAULT_ALGOS = ("qmix", "macpo", "accmer")
STEPS = {"-small": 40_000}  # the rest: 1M, the reference config's budget
LAST_EVALUATIONS = 10
# Paper 002: end-to-end training time saved by AccMER against MAC-PO (section V-C, V-D).
PAPER_SAVING = {"": 0.17, "-hard": 0.152, "-hard10": 0.152, "-16": 0.198, "-32": 0.254, "-small": math.nan}
LABELS = {"qmix": "QMIX", "macpo": "MAC-PO", "accmer": "AccMER", "vdn": "VDN", "iql": "IQL (recurrent)"}


def preset(setting: str, algo: str) -> str:
    return f"predator-prey{setting}-{algo}"


def grid(settings: list[str], algos: list[str] | None, seeds: int, steps: int | None) -> list[Job]:
    """Seed by seed, setting by setting: MAC-PO and AccMER first (the comparison the paper
    makes), then QMIX, then the others asked for."""
    chosen = [a for a in ("macpo", "accmer", "qmix", "vdn", "iql") if (algos is None and a in DEFAULT_ALGOS) or (algos and a in algos)]
    return [Job(preset(s, a), seed, steps or STEPS.get(s, 1_000_000)) for seed in range(seeds) for s in settings for a in chosen]


def _settings(args: argparse.Namespace) -> list[str]:
    """The ``--settings`` as keys of ``SETTINGS``, where ``base`` is the key ""."""
    if args.settings is None:
        return list(DEFAULT_SETTINGS)
    names = option_values(args.settings, [s.removeprefix("-") or "base" for s in SETTINGS], "setting")
    return ["" if name == "base" else f"-{name}" for name in names]


def jobs(args: argparse.Namespace) -> list[Job]:
    """The grid for ``relayrl reproduce accmer``'s options."""
    return grid(_settings(args), args.algos, args.seeds, args.steps)


def reward_table(results: Path, settings: tuple[str, ...], steps: int | None, seeds: int) -> str:
    """Final rewards at ``steps`` (default: each setting's budget)."""
    at = {s: steps or STEPS.get(s, 1_000_000) for s in settings}
    lines = ["| algorithm | " + " | ".join(f"{SETTINGS[s]} ({at[s] // 1000}k)" for s in settings) + " |", "|---|" + "---:|" * len(settings)]
    for algo in ALGOS:
        cells = []
        for setting in settings:
            step = at[setting]
            runs = runs_of(preset(setting, algo), results)
            cells.append(table_cell(final_rewards(runs, step, LAST_EVALUATIONS), runs, seeds))
        if any(c != "not run" for c in cells):
            lines.append(f"| {LABELS[algo]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _wall_at(rows: list[dict[str, float]], step: float) -> float:
    return next(r["wall_s"] for r in rows if r["env_steps"] >= step)


def _timing(results: Path, setting: str) -> tuple[float, list[tuple[float, float]], list[float]] | None:
    """MAC-PO's and AccMER's wall clocks at the largest step both runs of each seed reached,
    and each run's mean ``sample_share`` (%); None where no seed has both."""
    macpo, accmer = runs_of(preset(setting, "macpo"), results), runs_of(preset(setting, "accmer"), results)
    pairs = [(m, a) for m, a in zip(macpo, accmer) if m and a]
    if not pairs:
        return None
    step = min(min(m[-1]["env_steps"], a[-1]["env_steps"]) for m, a in pairs)
    walls = [(_wall_at(m, step), _wall_at(a, step)) for m, a in pairs]
    per_run = [[r["sample_share"] for r in rows if not math.isnan(r.get("sample_share", math.nan))] for pair in pairs for rows in pair]
    return step, walls, [100 * float(np.mean(v)) for v in per_run if v]


def time_table(results: Path, settings: tuple[str, ...]) -> str | None:
    """Per setting: MAC-PO's and AccMER's wall clock at the largest step both reached, paired
    by seed, AccMER's saving and the paper's; the share of the update time spent sampling
    (``sample_share``) over both."""
    lines = []
    for setting in settings:
        timing = _timing(results, setting)
        if timing is None:
            continue
        step, walls, shares = timing
        saving = [100 * (1 - a / m) for m, a in walls]
        paper = "-" if math.isnan(PAPER_SAVING[setting]) else f"{100 * PAPER_SAVING[setting]:.1f}"
        lines.append(
            f"| {SETTINGS[setting]} | {int(step):,} | {mean_std([m for m, _ in walls])} | {mean_std([a for _, a in walls])} "
            f"| {seeds_cell(saving)} | {paper} "
            f"| {mean_std(shares) if shares else '- (no update yet)'} |"
        )
    if not lines:
        return None
    header = "| setting | env steps | MAC-PO wall (s) | AccMER wall (s) | AccMER saving (%) | paper's saving (%) | sampling share of the learner's time (%) |"
    return "\n".join([header, "|---|---:|---:|---:|---:|---:|---:|", *lines])


def time_figure(results: Path, out: Path, settings: tuple[str, ...]) -> Path | None:
    """Figs. 4 and 6 of paper 002: MAC-PO's and AccMER's wall clock per setting (mean and std
    across seeds at the step both reached), with the measured and the paper's saving."""
    timed = [(s, t) for s in settings if (t := _timing(results, s)) is not None]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 2.6 * len(timed)), 4.2))
    for i, (setting, (step, walls, _)) in enumerate(timed):
        for offset, (algo, column) in zip((-0.2, 0.2), (("macpo", 0), ("accmer", 1))):
            values = [pair[column] for pair in walls]
            ax.bar(i + offset, np.mean(values), 0.38, yerr=np.std(values) if len(values) > 1 else None,
                   color=f"C{ALGOS.index(algo)}", label=LABELS[algo] if i == 0 else None)
        saving = np.mean([100 * (1 - a / m) for m, a in walls])
        paper = "" if math.isnan(PAPER_SAVING[setting]) else f"\npaper {100 * PAPER_SAVING[setting]:.1f}%"
        ax.annotate(f"saving {saving:.1f}%{paper}", (i, max(max(pair) for pair in walls)), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 4), textcoords="offset points")
    ax.set_xticks(range(len(timed)), [f"{SETTINGS[s]}\n{int(t[0]):,} env steps, {len(t[1])} seed(s)" for s, t in timed], fontsize=8)
    ax.set_ylabel("wall clock (s)")
    ax.grid(alpha=0.3, axis="y")
    if timed:
        ax.legend(fontsize=8)
        ax.margins(y=0.15)
    return save_if_drawn(plt, fig, out, bool(timed), "End-to-end training time, AccMER against MAC-PO")


def curves(results: Path, out: Path, settings: tuple[str, ...], key: str, ylabel: str) -> Path | None:
    """One panel per setting: mean +- std across seeds of ``key`` for each algorithm."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(settings), figsize=(6 * len(settings), 4.2), squeeze=False)
    drew = False
    for ax, setting in zip(axes[0], settings):
        for algo in ALGOS:
            drew |= draw_curve(ax, runs_of(preset(setting, algo), results), key, LABELS[algo])
        ax.set_title(f"Predator-Prey, {SETTINGS[setting]}")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    return save_if_drawn(plt, fig, out, drew, f"{ylabel} on Predator-Prey")


def write_report(results: Path, settings: tuple[str, ...], steps: int | None, seeds: int) -> list[Path]:
    """Writes tables.md and the figures under ``results``; returns the files written."""
    figures = results / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    text = [
        "# AccMER / MAC-PO reproduction: tables (generated by `relayrl reproduce accmer`)",
        "",
        f"Final reward: the mean of the last {LAST_EVALUATIONS} greedy evaluations (32 episodes each) up to the step in the "
        "header, then mean (std) across seeds.",
        "",
        reward_table(results, settings, steps, seeds),
        "",
    ]
    timing = time_table(results, settings)
    if timing is not None:
        text += ["## Training time, AccMER against MAC-PO", "", timing, ""]
    return write_tables(results / "tables.md", text, (
        curves(results, figures / "reward_eval.png", settings, "eval_reward_mean", "greedy evaluation reward"),
        curves(results, figures / "reward_train.png", settings, "episode_reward_mean", "training episodes' reward"),
        time_figure(results, figures / "training_time.png", settings),
    ))


studies = no_studies


def report(args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
    """``write_report`` for ``relayrl reproduce accmer``'s options."""
    return write_report(results, tuple(_settings(args)), args.steps, args.seeds), []
