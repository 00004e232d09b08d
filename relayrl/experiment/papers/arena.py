"""``relayrl reproduce arena``: the Arena's training-scheme examples (paper 004, section 5),
each against a baseline with the same env steps, and their report in docs/results/arena: a
curriculum (Fig. 8 in spirit) and population-based training (Fig. 13 in spirit) on the small
Predator-Prey game (QMIX) and on a small Pursuit (SUPER teams, the bandwidth among PBT's
hyperparameters); a round-robin tournament (Fig. 5) on MAgent2 battle 2 v 2 whose baseline
is a random team taking part in every round; self-play on battle 2 v 2 against training
versus a frozen pretrained opponent, both evaluated against the same held-out opponent;
and the evolution over PPO on Atari Pong (paper 004, appendix A.1.1, Fig. 13): three PPO
policies on three of nine copies each, the best one continuing alone every 250k env steps,
against one PPO policy on all nine, drawn as the paper draws it; and cooperative navigation
(paper 004, Figs. 10-11), the Arena's showcase: its three entity assignments as match lists
(MASAC with one worker of the three entities per copy, SAC with each entity a worker of its
own, one SAC agent over all three), with the env steps each first needs to reach 300, 600 and
800 of 900.
"""

import argparse
import csv
import math
from pathlib import Path

import numpy as np

from relayrl.experiment.grid import Job
from relayrl.experiment.papers.common import draw_curve, final_rewards, first_reaching, no_studies, option_values, run_copies, runs_of, steps_span, table_cell, write_tables
from relayrl.experiment.plots import finish_panel, mean_std, pyplot, save_if_drawn
from relayrl.experiment.presets import load_preset

NAME = "arena"
RESULTS = NAME
OPTIONS = frozenset({"examples"})
REFUSAL = frozenset({"domains", "tasks", "settings", "algos", "steps", "scale_switch_from"}), "reproduce arena takes --examples and --seeds (each example's presets fix their steps)"

# example -> the scheme's preset and its baseline's (the tournament's baseline plays inside it), labels
EXAMPLES = {
    "curriculum": (
        ("predator-prey-small-curriculum-qmix", "miscapture 0, -0.5, -1.0, -1.5 over four rounds"),
        ("predator-prey-small-hard-qmix", "miscapture -1.5 from the start"),
    ),
    "pbt": (
        ("predator-prey-small-pbt-qmix", "population of 3, PBT every 10k steps"),
        ("predator-prey-small-single-qmix", "one learner on the same 3 copies"),
    ),
    "curriculum-pursuit": (
        ("pursuit-small-curriculum-super", "catches by 3, 4, 5, 6 pursuers over four rounds"),
        ("pursuit-small-catch6-super", "catches by 6 from the start"),
    ),
    "pbt-pursuit": (
        ("pursuit-small-pbt-super", "3 SUPER teams, PBT of lr, exploration, bandwidth"),
        ("pursuit-small-single-super", "one SUPER team on the same 3 copies"),
    ),
    "pbt-pong": (
        ("pong-pbt-ppo", "3 PPO policies on 3 copies each, the best continues every 250k env steps"),
        ("pong-ppo", "one PPO policy on all 9 copies"),
    ),
    "navigation": (
        ("navigation-masac", "MASAC: one worker of the 3 entities per copy, a common critic"),
        ("navigation-sac-entity", "SAC per entity: each entity a worker of its own of one SAC policy"),
        ("navigation-sac-joint", "one SAC agent whose action is the 3 entities' together"),
    ),
    "tournament": (("battle-2v2-round-robin", "four DDQN teams and a random one, all pairings each round"),),
    "selfplay": (
        ("battle-2v2-selfplay", "blue against snapshots of itself"),
        ("battle-2v2-vs-frozen", "blue against a frozen co-trained red"),
    ),
}
CHOICES = {"examples": tuple(EXAMPLES)}
LAST_EVALUATIONS = 5


def grid(examples: list[str], seeds: int) -> list[Job]:
    return [Job(preset, seed, load_preset(preset).total_steps) for seed in range(seeds) for e in examples for preset, _ in EXAMPLES[e]]


def jobs(args: argparse.Namespace) -> list[Job]:
    """The grid for ``relayrl reproduce arena``'s options."""
    return grid(option_values(args.examples, EXAMPLES, "example"), args.seeds)


def scheme_tables(results: Path, preset: str, scheme: str) -> list[list[dict[str, str]]]:
    """The scheme's tables (``<scheme>.csv``) of the preset's runs kept under ``results/runs``."""
    found = []
    for path in (seed / f"{scheme}.csv" for seed in run_copies(preset, results)):
        if path.is_file():
            with path.open() as handle:
                found.append(list(csv.DictReader(handle)))
    return found


def best_per_round(lineage: list[dict[str, str]]) -> list[float]:
    """The best member's mean training return in each round."""
    rounds = sorted({int(r["round"]) for r in lineage})
    return [max(float(r["mean_return"]) for r in lineage if int(r["round"]) == k) for k in rounds]


def round_means(rows: list[dict[str, float]], rounds: int, total: int) -> list[float]:
    """A run's mean training return over each of ``rounds`` equal stretches of its steps;
    NaN for a stretch the run has not finished (as the population's table has no round yet)."""
    size = total / rounds
    reached = rows[-1]["env_steps"] if rows else 0
    return [
        float(np.nanmean([r["episode_reward_mean"] for r in rows if k * size < r["env_steps"] <= (k + 1) * size] or [math.nan]))
        if reached >= (k + 1) * size else math.nan
        for k in range(rounds)
    ]


def reward_table(results: Path, seeds: int) -> str:
    lines = ["| example | run | final greedy reward (mean of the last 5 evaluations) |", "|---|---|---:|"]
    for example, runs in EXAMPLES.items():
        for preset, label in runs:
            if not load_preset(preset).eval.interval:
                continue  # the tournament's figure is its Elo table
            total = load_preset(preset).total_steps
            found = runs_of(preset, results)
            cell = table_cell(final_rewards(found, total, LAST_EVALUATIONS, after_step=True, partial=True), found, seeds)
            lines.append(f"| {example} | `{preset}`: {label} | {cell} |")
    return "\n".join(lines)


PBT_EXAMPLES = ("pbt", "pbt-pursuit", "pbt-pong")
HYPERPARAMETERS = {"lr": "learning rate", "exploration_scale": "exploration scale", "bandwidth": "sharing bandwidth"}  # pbt.csv columns


def pbt_table(results: Path, example: str) -> str | None:
    """Per round: the population's best member's training return against the single
    learner's over the same env steps, mean (std) across seeds."""
    (scheme, _), (baseline, _) = EXAMPLES[example]
    tables = scheme_tables(results, scheme, "pbt")
    if not tables:
        return None
    config = load_preset(scheme)
    best = [best_per_round(t) for t in tables]
    single = [round_means(r, len(config.rounds), config.total_steps) for r in runs_of(baseline, results)]
    lines = ["| round | env steps | best member's training return | single learner's training return |", "|---:|---:|---:|---:|"]
    for k in range(len(config.rounds)):
        ours = [b[k] for b in best if len(b) > k]
        theirs = [s[k] for s in single if not math.isnan(s[k])]
        if ours or theirs:
            end = (k + 1) * config.total_steps // len(config.rounds)
            lines.append(f"| {k} | {end:,} | {mean_std(ours) if ours else '-'} | {mean_std(theirs) if theirs else '-'} |")
    return "\n".join(lines)


NAVIGATION_MARKS = (300.0, 600.0, 800.0)  # a target held for a whole game is 300; the paper's MASAC clears 800 (paper 004, section 4.2)


def navigation_table(results: Path) -> str | None:
    """Fig. 11's three assignments: per run, the env steps it reached, its last greedy
    evaluations and the first env step at which a greedy evaluation reached each mark, mean
    over the seeds that did (and how many did)."""
    found = {preset: runs_of(preset, results) for preset, _ in EXAMPLES["navigation"]}
    if not any(found.values()):
        return None
    marks = " | ".join(f"first greedy >= {m:g}" for m in NAVIGATION_MARKS)
    lines = [f"| run | seeds | env steps reached | greedy (mean of the last {LAST_EVALUATIONS}) | {marks} |", "|---|---:|---:|---:|" + "---:|" * len(NAVIGATION_MARKS)]
    for preset, label in EXAMPLES["navigation"]:
        runs = [r for r in found[preset] if r]
        if not runs:
            lines.append(f"| `{preset}`: {label} | 0 | - | - |" + " - |" * len(NAVIGATION_MARKS))
            continue
        reached = [int(r[-1]["env_steps"]) for r in runs]
        greedy = final_rewards(runs, 0, LAST_EVALUATIONS, after_step=True, partial=True)
        cells = []
        for mark in NAVIGATION_MARKS:
            firsts = [s for s in (first_reaching(r, mark) for r in runs) if s is not None]
            cells.append(f"{np.mean(firsts):,.0f} ({len(firsts)} of {len(runs)})" if firsts else f"- (0 of {len(runs)})")
        lines.append(f"| `{preset}`: {label} | {len(runs)} | {steps_span(reached)} | {mean_std(greedy) if greedy else '-'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tournament_table(results: Path) -> str | None:
    """Per round and policy: wins, draws, losses and Elo, mean (std) across seeds."""
    (preset, _), = EXAMPLES["tournament"]
    tables = scheme_tables(results, preset, "tournament")
    if not tables:
        return None
    lines = ["| round | policy | wins | draws | losses | Elo |", "|---:|---|---:|---:|---:|---:|"]
    keys = sorted({(int(r["round"]), r["policy"]) for t in tables for r in t})
    for k, pid in keys:
        rows = [r for t in tables for r in t if int(r["round"]) == k and r["policy"] == pid]
        cells = [mean_std([float(r[c]) for r in rows]) for c in ("wins", "draws", "losses", "elo")]
        lines.append(f"| {k} | {pid} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n{len(tables)} seed(s)."


def elo_figure(results: Path, out: Path) -> Path | None:
    """Each policy's Elo rating after every round, mean +- std across seeds."""
    (preset, _), = EXAMPLES["tournament"]
    tables = scheme_tables(results, preset, "tournament")
    if not tables:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for pid in sorted({r["policy"] for r in tables[0]}):
        rounds = sorted({int(r["round"]) for t in tables for r in t if r["policy"] == pid})
        values = np.array([[next((float(r["elo"]) for r in t if r["policy"] == pid and int(r["round"]) == k), np.nan) for t in tables] for k in rounds])
        mean, std = np.nanmean(values, axis=1), np.nanstd(values, axis=1)
        ax.plot(rounds, mean, marker=".", label=pid)
        ax.fill_between(rounds, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("round")
    ax.set_ylabel("Elo rating after the round")
    ax.set_title(f"round-robin tournament, MAgent2 battle 2 v 2 ({len(tables)} seed(s))")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_if_drawn(plt, fig, out, True, "tournament Elo")


def curves(results: Path, out: Path) -> Path | None:
    """Greedy evaluation over env steps, scheme against baseline, one panel per example
    (round boundaries dotted)."""
    plt = pyplot()
    shown = {e: runs for e, runs in EXAMPLES.items() if load_preset(runs[0][0]).eval.interval and any(any(runs_of(p, results)) for p, _ in runs)}
    if not shown:
        return None
    columns = min(3, len(shown))
    rows = math.ceil(len(shown) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4.2 * rows), squeeze=False)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    drew = False
    for ax, (example, runs) in zip(axes.flat, shown.items()):
        for preset, label in runs:
            drew |= draw_curve(ax, runs_of(preset, results), "eval_reward_mean", label)
        config = load_preset(runs[0][0])
        for end in np.cumsum([r.steps for r in config.rounds])[:-1]:
            ax.axvline(end, color="grey", linestyle=":", linewidth=0.8)
        finish_panel(ax, f"{example} ({config.env.name})", "greedy evaluation reward")
    return save_if_drawn(plt, fig, out, drew, "Arena schemes against their baselines")


def lineage_figure(results: Path, example: str, out: Path) -> Path | None:
    """Seed 0's population: each member's hyperparameters over rounds (a panel per
    hyperparameter the table records), a marker where it copied another member."""
    (scheme, _), _ = EXAMPLES[example]
    tables = scheme_tables(results, scheme, "pbt")
    pbt = load_preset(scheme).pbt
    if not tables or pbt is None or not pbt.perturb:  # a population that only copies keeps its hyperparameters
        return None
    rows = tables[0]
    shown = [key for key in HYPERPARAMETERS if key in rows[0]]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(shown), figsize=(6 * len(shown), 4.2), squeeze=False)
    for ax, key in zip(axes[0], shown):
        for member in sorted({r["member"] for r in rows}):
            mine = [r for r in rows if r["member"] == member]
            line = ax.plot([int(r["round"]) for r in mine], [float(r[key]) for r in mine], marker=".", label=member)[0]
            copied = [r for r in mine if r["copied_from"]]
            ax.scatter([int(r["round"]) for r in copied], [float(r[key]) for r in copied], s=80, facecolors="none", edgecolors=line.get_color())
            for r in copied:
                ax.annotate(f"<- {r['copied_from']}", (int(r["round"]), float(r[key])), fontsize=7, xytext=(4, 4), textcoords="offset points")
        ax.set_yscale("log")
        ax.set_xlabel(f"round ({HYPERPARAMETERS[key]} after its exploit and explore)")
        ax.set_ylabel(HYPERPARAMETERS[key])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"PBT lineage, {load_preset(scheme).env.name}, seed 0 (circles: copied a better member)")
    return save_if_drawn(plt, fig, out, True, f"PBT lineage ({example})")


def evolution_figure(results: Path, example: str, out: Path) -> Path | None:
    """Paper 004's Fig. 13: each member's training return over the run's env steps, every
    seed. In each generation the member that continued is drawn red and the ones abandoned
    at its end as thin orange hairs; the single learner on all copies is purple."""
    (scheme, _), (baseline, _) = EXAMPLES[example]
    tables, members = scheme_tables(results, scheme, "pbt"), runs_of(scheme, results)
    singles = runs_of(baseline, results)
    if not any(members) and not any(singles):  # no run has reported yet
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for lineage, rows in zip(tables, members):
        for index in sorted({int(r["round"]) for r in lineage}):
            kept = {r["member"]: not r["copied_from"] for r in lineage if int(r["round"]) == index}
            shown = [r for r in rows if int(r["round"]) == index]
            for member, survived in kept.items():
                x = [r["env_steps"] for r in shown if math.isfinite(r[f"policy_reward_mean/{member}"])]
                y = [r[f"policy_reward_mean/{member}"] for r in shown if math.isfinite(r[f"policy_reward_mean/{member}"])]
                ax.plot(x, y, color="tab:red" if survived else "tab:orange", linewidth=1.6 if survived else 0.6, alpha=1.0 if survived else 0.7)
    for rows in singles:
        x = [r["env_steps"] for r in rows if math.isfinite(r["episode_reward_mean"])]
        ax.plot(x, [r["episode_reward_mean"] for r in rows if math.isfinite(r["episode_reward_mean"])], color="tab:purple", linewidth=1.6)
    config = load_preset(scheme)
    reached = max((r["env_steps"] for rows in (*members, *singles) for r in rows), default=0)
    for end in np.cumsum([r.steps for r in config.rounds])[:-1]:
        if end < reached:  # the generations the runs have reached
            ax.axvline(end, color="grey", linestyle=":", linewidth=0.5)
    ax.plot([], [], color="tab:red", label=f"evolution: the member that continued ({len(members)} seed(s))")
    ax.plot([], [], color="tab:orange", linewidth=0.6, label="members abandoned at a generation's end")
    ax.plot([], [], color="tab:purple", label=f"one PPO policy on all copies ({len(singles)} seed(s))")
    ax.set_xlabel("environment steps (all copies)")
    ax.set_ylabel("training return (game score)")
    ax.set_title(f"evolution over PPO, {config.env.env_settings().get('game', config.env.name)} (paper 004, Fig. 13)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_if_drawn(plt, fig, out, True, f"evolution over PPO ({example})")


def write_report(results: Path, seeds: int) -> list[Path]:
    """Writes tables.md and the figures under ``results``; returns the files written."""
    figures = results / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    text = ["# Arena schemes against their baselines (generated by `relayrl reproduce arena`)", "", reward_table(results, seeds), ""]
    for example in PBT_EXAMPLES:
        pbt = pbt_table(results, example)
        if pbt is not None:
            text += [f"## Population-based training, {example}: round by round", "", pbt, ""]
    navigation = navigation_table(results)
    if navigation is not None:
        text += ["## Cooperative navigation (Fig. 11): the env steps to each greedy return", "", navigation, ""]
    tournament = tournament_table(results)
    if tournament is not None:
        text += ["## Round-robin tournament: the table after each round", "", tournament, ""]
    return write_tables(results / "tables.md", text, (
        curves(results, figures / "eval_reward.png"),
        *(lineage_figure(results, e, figures / f"{e.replace('pbt', 'pbt_lineage')}.png") for e in PBT_EXAMPLES),
        evolution_figure(results, "pbt-pong", figures / "evolution_pong.png"),
        elo_figure(results, figures / "tournament_elo.png"),
    ))


studies = no_studies


def report(args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
    """``write_report`` for ``relayrl reproduce arena``'s options."""
    return write_report(results, args.seeds), []
