"""``relayrl reproduce super``: the SUPER paper (paper 000), its run grid, and Table 1 and
the figures with our numbers next to the paper's.

Aggregation is the paper's (appendix E): reporting steps rounded down to bins of 8000
(Pursuit) or 6000 env steps (Battle, Adversarial-Pursuit), reports averaged within a bin,
then mean and std across seeds; exponential smoothing (alpha 0.3 / 0.1 / 0.25) only for
display. Figures and tables are drawn from copies of the runs' metrics kept under
``<results>/runs/`` so they can be regenerated without the run directories.
"""

import argparse
import csv
import math
from pathlib import Path

import numpy as np

from relayrl.experiment.checkpoint import list_checkpoints, load_checkpoint
from relayrl.experiment.config import validate_config
from relayrl.experiment.grid import Job
from relayrl.experiment.papers.common import Display, draw_curve, option_values, runs_of, table_cell
from relayrl.experiment.plots import binned, finish_panel, mean_std, pyplot, save_if_drawn, smooth
from relayrl.experiment.presets import PRESETS
from relayrl.experiment.presets.super import COEVOLVING_VARIANTS, SWEEP_BANDWIDTHS, SWEEP_MODES, SWEEP_STEPS, sweep_preset
from relayrl.experiment.build import build_run
from relayrl.experiment.run_dir import saved_config
from relayrl.sharing.selectors import GaussianSelector, QuantileSelector

NAME = "super"
RESULTS = NAME
OPTIONS = frozenset({"domains", "algos", "steps", "scale_switch_from"})
REFUSAL = frozenset({"tasks", "settings"}), "--tasks and --settings are options of reproduce dase and accmer; SUPER takes --domains"

DOMAINS = ("pursuit", "battle", "adversarial-pursuit")
CHOICES = {"domains": DOMAINS}
TABLE_STEPS = {"pursuit": 800_000, "battle": 300_000, "adversarial-pursuit": 300_000}  # Table 1 (appendix C.1)
BIN = {"pursuit": 8000, "battle": 6000, "adversarial-pursuit": 6000}
ALPHA = {"pursuit": 0.3, "battle": 0.1, "adversarial-pursuit": 0.25}
SHARING_TEAM = {"pursuit": "all pursuers", "battle": "blue", "adversarial-pursuit": "prey"}

# Paper 000, Table 1: mean (std) over 3 seeds of the episode reward summed over the sharing team.
PAPER_TABLE1: dict[str, dict[str, tuple[float, float]]] = {
    "ddqn": {"pursuit": (181.43, 4.16), "battle": (9.46, 0.86), "adversarial-pursuit": (-719.78, 66.82)},
    "paramshare": {"pursuit": (-139.03, 121.11), "battle": (15.15, 8.64), "adversarial-pursuit": (-268.78, 60.11)},
    "shareall": {"pursuit": (148.27, 9.22), "battle": (9.25, 6.60), "adversarial-pursuit": (-568.91, 40.82)},
    "maddpg": {"pursuit": (-342.24, 4.12), "battle": (-10.31, 0.0), "adversarial-pursuit": (-1071.71, 8.56)},
    "seac": {"pursuit": (32.51, 70.27), "battle": (-2.73, 0.03), "adversarial-pursuit": (-993.40, 120.22)},
    "super-quantile": {"pursuit": (454.56, 5.89), "battle": (17.05, 2.74), "adversarial-pursuit": (-506.29, 35.03)},
    "super-gaussian": {"pursuit": (373.63, 9.15), "battle": (16.28, 3.42), "adversarial-pursuit": (-480.37, 15.79)},
    "super-stochastic": {"pursuit": (266.42, 85.52), "battle": (7.43, 5.64), "adversarial-pursuit": (-582.59, 15.20)},
}
# Table 1's baselines of other learner kinds, where their preset exists (Pursuit): a SEAC or
# MADDPG team beside the frozen DQN opponents of Battle and Adversarial-Pursuit needs a
# policy whose algorithm differs from the run's section
OTHER_BASELINES = ("seac", "maddpg")
TABLE1_ALGOS = ("ddqn", "paramshare", "shareall", "super-quantile", "super-gaussian", "super-stochastic")
DQN_ALGOS = ("dqn", "dqn-paramshare", "dqn-shareall", "dqn-super-quantile", "dqn-super-gaussian", "dqn-super-stochastic")
MAIN_ALGOS = ("ddqn", "super-quantile")
SWEEP_ENDPOINTS = {"none (ddqn)": "ddqn", "all (share-all)": "shareall"}  # Figure 4/10's ends


def grid(domains: list[str], algos: list[str] | None, seeds: int, steps: int | None) -> list[Job]:
    """Jobs in the issue's order of priority: (1) Pursuit ddqn / super-quantile; (2) the same
    in Battle and Adversarial-Pursuit against pretrained opponents; (3) the rest of Table 1
    and Figure 3's uniform ablation; (4) the Pursuit bandwidth sweep at 250k and the
    gaussian scale switch; (5) plain DQN (Figure 6) and co-evolving opponents (Figure 7)."""
    tiers: list[list[tuple[str, str, int]]] = [[], [], [], [], []]
    for domain in domains:
        tier = 0 if domain == "pursuit" else 1
        for algo in MAIN_ALGOS:
            tiers[tier].append((domain, algo, TABLE_STEPS[domain]))
        for algo in TABLE1_ALGOS:
            if algo not in MAIN_ALGOS:
                tiers[2].append((domain, algo, TABLE_STEPS[domain]))
        for algo in OTHER_BASELINES:
            if f"{domain}-{algo}" in PRESETS:
                tiers[2].append((domain, algo, TABLE_STEPS[domain]))
        if domain == "pursuit":
            tiers[2].append((domain, "uniform", TABLE_STEPS[domain]))
            for mode in SWEEP_MODES:
                for bandwidth in SWEEP_BANDWIDTHS:
                    tiers[3].append((domain, sweep_preset(mode, bandwidth).removeprefix("pursuit-"), SWEEP_STEPS))
            tiers[3].append((domain, "super-gaussian-variance", SWEEP_STEPS))
            for endpoint in SWEEP_ENDPOINTS.values():  # the sweep's "none" and "all" ends
                tiers[3].append((domain, endpoint, SWEEP_STEPS))
        for algo in DQN_ALGOS:
            tiers[4].append((domain, algo, TABLE_STEPS[domain]))
        if domain != "pursuit":
            for algo in COEVOLVING_VARIANTS:
                tiers[4].append((domain, f"coevolve-{algo}", TABLE_STEPS[domain]))
    jobs = []
    for tier in tiers:
        for domain, algo, default_steps in tier:
            if algos is not None and algo not in algos:
                continue
            for seed in range(seeds):
                jobs.append(Job(f"{domain}-{algo}", seed, steps or default_steps))
    return jobs


def jobs(args: argparse.Namespace) -> list[Job]:
    """The grid for ``relayrl reproduce super``'s options."""
    return grid(option_values(args.domains, DOMAINS, "domain"), args.algos, args.seeds, args.steps)


def _at(runs: list[list[dict[str, float]]], key: str, step: int, bin_size: int) -> list[float]:
    target = step // bin_size * bin_size
    return [b[target] for b in (binned(r, key, bin_size) for r in runs) if target in b]


def _snapshot_row(name: str, runs: list[list[dict[str, float]]], step: int, bin_size: int) -> str:
    """One row of the progress table: the runs that reached ``step``, in its bin."""
    reached = [r for r in runs if int(r[-1]["env_steps"]) >= step]
    train = _at(reached, "episode_reward_mean", step, bin_size)
    evaluation = [
        [row["eval_reward_mean"] for row in r if row["env_steps"] <= step + bin_size - 1 and not math.isnan(row["eval_reward_mean"])]
        for r in reached
    ]
    latest_eval = [e[-1] for e in evaluation if e]
    cells = [mean_std(v) if v else "-" for v in (train, latest_eval)]
    return f"| {name} | {len(reached)} | {step:,} | {cells[0]} | {cells[1]} |"


def snapshot(results: Path, algos: tuple[str, ...] = (*TABLE1_ALGOS, "uniform")) -> str:
    """Runs in progress: mean (std) at the latest bin every seed has reached and, where the
    seeds are uneven, also at the latest bin of the seeds furthest ahead."""
    lines = ["| run | seeds | bin (env steps) | train | eval (latest in bin) |", "|---|---:|---:|---:|---:|"]
    for domain in DOMAINS:
        bin_size = BIN[domain]
        for algo in algos:
            runs = [r for r in runs_of(f"{domain}-{algo}", results) if r]
            if not runs:
                continue
            reached = sorted({int(r[-1]["env_steps"]) // bin_size * bin_size for r in runs})
            for step in dict.fromkeys((reached[0], reached[-1])):
                lines.append(_snapshot_row(f"{domain}-{algo}", runs, step, bin_size))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- Table 1
def table1(results: Path, seeds: int = 3) -> tuple[str, list[str]]:
    """Markdown Table 1 (paper vs ours, training and greedy-evaluation reward) and the cells
    where our training mean is more than two of the paper's standard deviations away."""
    header = "| algorithm | " + " | ".join(f"{d} paper | {d} ours (train) | {d} ours (eval)" for d in DOMAINS) + " |"
    lines = [header, "|---|" + "---:|---:|---:|" * len(DOMAINS)]
    far: list[str] = []
    for algo, paper in PAPER_TABLE1.items():
        cells = []
        for domain in DOMAINS:
            mean, std = paper[domain]
            cells.append(f"{mean:.2f} ({std:.2f})")
            if f"{domain}-{algo}" not in PRESETS:
                cells += ["no preset"] * 2
                continue
            runs = runs_of(f"{domain}-{algo}", results)
            train = _at(runs, "episode_reward_mean", TABLE_STEPS[domain], BIN[domain])
            evaluation = _at(runs, "eval_reward_mean", TABLE_STEPS[domain], BIN[domain])
            cell = table_cell(train, runs, seeds)
            if train and len(train) >= seeds and abs(np.mean(train) - mean) > 2 * max(std, 1e-9):
                cell += " †"
                far.append(f"{domain} {algo}: ours {np.mean(train):.2f} vs paper {mean:.2f} ({std:.2f})")
            cells += [cell, table_cell(evaluation, runs, seeds)]
        lines.append(f"| {algo} | " + " | ".join(cells) + " |")
    return "\n".join(lines), far


# ---------------------------------------------------------------------------- figures
def _smoothing(alpha: float) -> Display:
    """Exponential smoothing of a curve's mean and std (display only)."""
    return lambda mean, std: (smooth(mean, alpha), smooth(std, alpha))


def _curves_figure(results: Path, out: Path, panels: list[tuple[str, list[tuple[str, str]]]], title: str, key: str = "episode_reward_mean") -> Path | None:
    """One panel per domain; each panel's curves are (preset, label)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    drew = False
    for ax, (domain, curves) in zip(axes[0], panels):
        for preset, label in curves:
            drew |= draw_curve(ax, runs_of(preset, results), key, label, BIN[domain], _smoothing(ALPHA[domain]), fill=0.15)
        ax.set_title(f"{domain} (reward of {SHARING_TEAM[domain]})")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(key.replace("_", " "))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "not run yet", ha="center", va="center", transform=ax.transAxes)
    return save_if_drawn(plt, fig, out, drew, title)


def _bars_figure(results: Path, out: Path, algos: tuple[str, ...], title: str) -> Path | None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(DOMAINS), figsize=(18, 4.2), squeeze=False)
    drew = False
    for ax, domain in zip(axes[0], DOMAINS):
        names, means, stds, papers = [], [], [], []
        for algo in algos:
            values = _at(runs_of(f"{domain}-{algo}", results), "episode_reward_mean", TABLE_STEPS[domain], BIN[domain])
            names.append(algo)
            means.append(np.mean(values) if values else math.nan)
            stds.append(np.std(values) if values else 0.0)
            papers.append(PAPER_TABLE1.get(algo, {}).get(domain, (math.nan, 0))[0])
        x = np.arange(len(names))
        ax.bar(x - 0.2, means, 0.4, yerr=stds, label="relayrl")
        ax.bar(x + 0.2, papers, 0.4, color="lightgray", label="paper")
        ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{domain} @ {TABLE_STEPS[domain] // 1000}k")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
        drew |= any(not math.isnan(m) for m in means)
    return save_if_drawn(plt, fig, out, drew, title)


# The sharing team's id in multi-team metrics (``td_loss/<team>``); Pursuit has one team.
TEAM_KEY = {"pursuit": None, "battle": "blue", "adversarial-pursuit": "prey"}
HEALTH_ALGOS = ("pretrain", "ddqn", "super-quantile", "paramshare", "shareall", "super-gaussian", "super-stochastic")


def _td_loss_figure(results: Path, out: Path) -> Path | None:
    """The sharing team's TD loss of every seed of the DQN-family runs, one thin line each,
    on a log scale: where Q-values diverge (Battle's blue team) the loss grows by decades."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(DOMAINS), figsize=(18, 4.2), squeeze=False)
    drew = False
    for ax, domain in zip(axes[0], DOMAINS):
        key = f"td_loss/{TEAM_KEY[domain]}" if TEAM_KEY[domain] else "td_loss"
        for index, algo in enumerate(HEALTH_ALGOS):
            runs = [r for r in runs_of(f"{domain}-{algo}", results) if r and key in r[0]] if f"{domain}-{algo}" in PRESETS else []
            for seed, rows in enumerate(runs):
                points = [(row["env_steps"], row[key]) for row in rows if row[key] > 0]
                if points:
                    steps, losses = zip(*points)
                    ax.plot(steps, losses, color=f"C{index}", lw=0.9, alpha=0.8, label=f"{algo} ({len(runs)} seeds)" if seed == 0 else None)
                    drew = True
        ax.set_yscale("log")
        finish_panel(ax, f"{domain} ({SHARING_TEAM[domain]})", "TD loss (weighted Huber)")
    return save_if_drawn(plt, fig, out, drew, "The sharing team's TD loss, every seed")


def _sweep_figures(results: Path, out_dir: Path) -> list[Path]:
    """Figure 4/10 (reward at 250k vs target bandwidth) and Figure 11 (realised vs target)."""
    plt = pyplot()
    written = []
    for key, name, ylabel in (
        ("episode_reward_mean", "figure4_bandwidth_sweep.png", "training reward at 250k"),
        ("bandwidth_actual", "figure11_realised_bandwidth.png", "realised bandwidth (mean over 250k)"),
    ):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        drew = False
        for mode in SWEEP_MODES:
            xs, ys, es = [], [], []
            for bandwidth in SWEEP_BANDWIDTHS:
                runs = runs_of(sweep_preset(mode, bandwidth), results)
                if key == "bandwidth_actual":
                    values = [np.nanmean([r[key] for r in rows if r["env_steps"] <= SWEEP_STEPS]) for rows in runs if rows]
                else:
                    values = _at(runs, key, SWEEP_STEPS, BIN["pursuit"])
                if values:
                    xs.append(bandwidth)
                    ys.append(np.mean(values))
                    es.append(np.std(values))
            if xs:
                ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=mode)
                drew = True
        if key == "bandwidth_actual":
            ax.plot(SWEEP_BANDWIDTHS, SWEEP_BANDWIDTHS, "k--", lw=0.8, label="target")
            ax.set_yscale("log")
        else:
            for (label, algo), style in zip(SWEEP_ENDPOINTS.items(), (":", "-.")):
                values = _at(runs_of(f"pursuit-{algo}", results), key, SWEEP_STEPS, BIN["pursuit"])
                if values:
                    ax.axhline(np.mean(values), color="gray", linestyle=style, label=f"{label}, {len(values)} seeds")
                    drew = True
        ax.set_xscale("log")
        ax.set_xlabel("target bandwidth")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if drew:
            ax.legend()
        saved = save_if_drawn(plt, fig, out_dir / name, drew, "Pursuit bandwidth sweep")
        if saved is not None:
            written.append(saved)
    return written


def figures(results: Path) -> list[Path]:
    """Writes every figure it has data for; returns the paths written."""
    results.mkdir(parents=True, exist_ok=True)
    label = {a: a.replace("-", " ") for a in (*TABLE1_ALGOS, *DQN_ALGOS, "uniform", "super-gaussian-variance")}
    written = [
        _curves_figure(
            results,
            results / "figure1_curves.png",
            [(d, [(f"{d}-{a}", label[a]) for a in TABLE1_ALGOS]) for d in DOMAINS],
            "Figure 1: SUPER-DDQN and baselines (training episodes)",
        ),
        _curves_figure(
            results,
            results / "figure1_eval_curves.png",
            [(d, [(f"{d}-{a}", label[a]) for a in TABLE1_ALGOS]) for d in DOMAINS],
            "Figure 1, greedy evaluation episodes",
            key="eval_reward_mean",
        ),
        _bars_figure(results, results / "figure2_bars.png", TABLE1_ALGOS, "Figure 2: final performance, relayrl vs paper"),
        _curves_figure(
            results,
            results / "figure3_ablation.png",
            [("pursuit", [(f"pursuit-{a}", label[a]) for a in ("super-quantile", "uniform", "shareall", "ddqn")])],
            "Figure 3: SUPER vs uniform vs share-all",
        ),
        _curves_figure(
            results,
            results / "figure6_plain_dqn.png",
            [(d, [(f"{d}-{a}", label[a]) for a in DQN_ALGOS]) for d in DOMAINS],
            "Figure 6: plain DQN (no double, no dueling)",
        ),
        _curves_figure(
            results,
            results / "figure7_coevolving.png",
            [(d, [(f"{d}-coevolve-{a}", a.replace("-", " ")) for a in COEVOLVING_VARIANTS]) for d in DOMAINS[1:]],
            "Figure 7: co-evolving DDQN opponents",
        ),
        _curves_figure(
            results,
            results / "gaussian_scale_switch.png",
            [("pursuit", [("pursuit-super-gaussian", "gaussian, std scale (default)"), ("pursuit-super-gaussian-variance", "gaussian, variance scale (reference code)")])],
            "Gaussian threshold: std vs the reference code's variance scale",
        ),
        _td_loss_figure(results, results / "td_loss.png"),
        *_sweep_figures(results, results),
        _scale_switch_figure(results),
    ]
    return [p for p in written if p is not None]


def write_report(results: Path, seeds: int = 3) -> tuple[list[Path], list[str]]:
    """Writes ``table1.md`` and the figures; returns the files written and the far cells."""
    table, far = table1(results, seeds)
    results.mkdir(parents=True, exist_ok=True)
    notes = (
        "Paper 000, Table 1 vs relayrl: mean (std) over seeds of the episode reward summed over the "
        "sharing team, at 800k (Pursuit) and 300k (Battle, Adversarial-Pursuit) env steps, in the paper's "
        "bins (8000 / 6000 steps). 'train' is the mean over training episodes in the bin (with "
        "exploration, what the paper's RLlib runs report); 'eval' is the greedy evaluation. "
        "† marks a training mean more than two of the paper's standard deviations away (see README.md)."
    )
    progress_notes = (
        "Runs not yet at the paper's step count, at the latest bin all their seeds have reached "
        "(training mean in the bin; the last greedy evaluation up to it)."
    )
    path = results / "table1.md"
    path.write_text(f"# Table 1\n\n{notes}\n\n{table}\n\n## As the runs stand\n\n{progress_notes}\n\n{snapshot(results)}\n")
    return [path, *figures(results)], far


def report(args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
    """``write_report`` for ``relayrl reproduce super``, whose lines to print are the far cells."""
    written, far = write_report(results, args.seeds)
    return written, [f"more than 2 paper std away: {line}" for line in far]


# ---------------------------------------------------------------------------- scale switch
SCALE_STUDY_FILE = "gaussian_scale_switch.csv"


def scale_switch_study(run_dir: Path, results: Path, transitions: int = 20_000, fragment: int = 4, window: int = 1500) -> Path:
    """Realised bandwidth of the gaussian rule with the std scale (ours) and the variance
    scale (paper eq. 3 and the reference code), and of the quantile rule, on the |td| stream
    of a trained run's own most recent transitions (each agent's replay, oldest first,
    scored with that agent's networks at the checkpoint), replayed through the selectors in
    fragments as in training. Writes a CSV under ``results``."""
    config = validate_config(saved_config(run_dir))
    if config.sharing.select != "none":
        raise ValueError("use a run without sharing: its replays hold only each agent's own transitions")
    checkpoint = list_checkpoints(run_dir / "checkpoints")[-1]
    run = build_run(config, None, verbose=False)
    run.load_state_dict(load_checkpoint(checkpoint))
    learner = next(iter(run.learners.values()))
    store, ptr, size = learner.replay.storage(), learner.replay.write_position, learner.replay.size
    n = min(transitions, int(size.min()))
    if n < 2 * window:
        raise ValueError(f"{run_dir} holds {n} transitions per agent; the study needs at least {2 * window}")
    rows = (ptr[:, None] - n + np.arange(n)[None, :]) % learner.replay.capacity  # oldest first
    agents = np.arange(learner.layout.n_sets)[:, None]
    batch = {k: v[agents, rows] for k, v in store.items()}
    td_abs = np.concatenate([np.abs(learner.algorithm.td_error({k: v[:, i : i + 1000] for k, v in batch.items()})) for i in range(0, n, 1000)], axis=1)
    valid = np.ones_like(td_abs[:, :fragment], dtype=bool)
    out = results / SCALE_STUDY_FILE
    results.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rule", "target_bandwidth", "realised_bandwidth", "transitions_per_agent", "run", "checkpoint"])
        for bandwidth in SWEEP_BANDWIDTHS:
            rules = {
                "gaussian (std)": GaussianSelector(len(td_abs), bandwidth, window, "std"),
                "gaussian (variance)": GaussianSelector(len(td_abs), bandwidth, window, "variance"),
                "quantile": QuantileSelector(len(td_abs), bandwidth, window),
            }
            for name, selector in rules.items():
                shared = offered = 0
                for start in range(0, n - fragment + 1, fragment):
                    chosen = selector.select(td_abs[:, start : start + fragment], valid)
                    if start >= window:  # count once the window is full
                        shared += int(chosen.sum())
                        offered += chosen.size
                writer.writerow([name, bandwidth, shared / offered, n, run_dir.parent.name + "/" + run_dir.name, checkpoint.name])
    return out


def studies(args: argparse.Namespace, results: Path) -> list[str]:
    """The scale switch study on the run ``--scale-switch-from`` names, if it names one."""
    if not args.scale_switch_from:
        return []
    return [f"wrote {scale_switch_study(Path(args.scale_switch_from), results)}"]


def _scale_switch_figure(results: Path) -> Path | None:
    path = results / SCALE_STUDY_FILE
    if not path.is_file():
        return None
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for rule in dict.fromkeys(r["rule"] for r in rows):
        points = [(float(r["target_bandwidth"]), float(r["realised_bandwidth"])) for r in rows if r["rule"] == rule]
        ax.plot(*zip(*points), marker="o", label=rule)
    ax.plot(SWEEP_BANDWIDTHS, SWEEP_BANDWIDTHS, "k--", lw=0.8, label="target")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("target bandwidth")
    ax.set_ylabel("realised bandwidth")
    ax.set_title(f"Gaussian scale switch on Pursuit |td| ({rows[0]['run']}, {rows[0]['checkpoint']})", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = results / "gaussian_scale_switch_bandwidth.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
