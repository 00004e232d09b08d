"""Learning curves in the SUPER paper's style (paper 000, Appendix E; SPEC §1.1).

Aggregation: round each run's reporting steps down to bins (8000 env steps in Pursuit),
average a run's reports within a bin, then take mean and std across seeds. Exponential
smoothing (alpha 0.3 in Pursuit) is for display only.
"""

import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from relayrl.core.errors import RelayRLError
from relayrl.experiment.metrics import read_metrics


def binned(rows: list[dict[str, float]], key: str, bin_size: int) -> dict[int, float]:
    """Per-bin mean of ``key`` over one run's rows (NaN rows skipped)."""
    sums: dict[int, list[float]] = {}
    for row in rows:
        value = row.get(key, math.nan)
        if not math.isnan(value):
            sums.setdefault(int(row["env_steps"]) // bin_size * bin_size, []).append(value)
    return {b: float(np.mean(v)) for b, v in sorted(sums.items())}


def aggregate(runs: list[list[dict[str, float]]], key: str, bin_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bins reached by any run: steps, mean and std (population) across the runs that
    reached each bin, and how many did. Seeds progress at different speeds; cutting every
    curve at the shortest seed would hide how far the others have got."""
    per_run = [b for b in (binned(rows, key, bin_size) for rows in runs) if b]
    steps = sorted(set().union(*per_run))
    values = np.array([[r.get(s, math.nan) for s in steps] for r in per_run]).reshape(len(per_run), len(steps))
    count = (~np.isnan(values)).sum(axis=0)
    if not steps:
        return np.array(steps), np.zeros(0), np.zeros(0), count
    return np.array(steps), np.nanmean(values, axis=0), np.nanstd(values, axis=0), count


def seeds_label(name: str, steps: np.ndarray, count: np.ndarray) -> str:
    """Legend entry naming the seeds behind a curve from ``aggregate``, and where the
    curve starts to rest on fewer of them."""
    most = int(count.max())
    label = f"{name} ({most} seed{'s' if most > 1 else ''}"
    if count[-1] < most:
        full_to = int(steps[count == most][-1])
        label += f" to {full_to / 1000:g}k, {int(count[-1])} to {int(steps[-1]) / 1000:g}k"
    return label + ")"


def smooth(values: np.ndarray, alpha: float) -> np.ndarray:
    """Exponential smoothing s_t = alpha x_t + (1 - alpha) s_{t-1} (display only)."""
    out = np.array(values, dtype=float)
    for i in range(1, len(out)):
        out[i] = alpha * out[i] + (1 - alpha) * out[i - 1]
    return out


def report_bin(experiments: list[Path]) -> int:
    """The runs' own bin: the env steps between two metric rows of the first run (its
    ``report_interval``), so that a short run's curve has a point per row."""
    for experiment in experiments:
        for run in seed_dirs(experiment):
            steps = [int(r["env_steps"]) for r in read_metrics(run)]
            if len(steps) >= 2:
                return max(1, int(np.median(np.diff(steps))))
            if steps:
                return max(1, steps[0])
    return 8000


def seed_dirs(path: Path) -> list[Path]:
    """A run directory (``.../<seed>/`` with metrics.csv) or an experiment directory of seeds."""
    if (path / "metrics.csv").is_file():
        return [path]
    return sorted(p for p in path.iterdir() if (p / "metrics.csv").is_file())


def existing_runs(paths: list[str]) -> list[Path]:
    """The given run or experiment directories; a path that is none (a typo, a run not yet
    started) is refused by name, not drawn or tabled as an empty experiment."""
    missing = [p for p in paths if not Path(p).is_dir()]
    if missing:
        raise RelayRLError(f"no such run directory: {', '.join(missing)} (runs live in <out>/<preset>-<hash>/<seed>/)")
    empty = [p for p in paths if not seed_dirs(Path(p))]
    if empty:
        raise RelayRLError(f"no run under {', '.join(empty)}: no metrics.csv there or in its folders. Give run directories "
                           "(<out>/<preset>-<hash>/<seed>/) or the experiment directories that hold them (<out>/<preset>-<hash>/)")
    return [Path(p) for p in paths]


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys."""
    if not isinstance(tree, dict) or not tree:
        return {prefix.rstrip("."): tree}
    return {k: v for key, value in tree.items() for k, v in _flat(value, f"{prefix}{key}.").items()}


def curve_names(experiments: list[Path]) -> list[str]:
    """Each experiment's preset (``<preset>-<hash>/[<seed>/]``); where several share one, the
    config keys whose values tell them apart (``sharing.bandwidth=0.01``), or their hashes."""
    dirs = [_experiment_dir(e) for e in experiments]
    return [f"{d.name.rsplit('-', 1)[0]} {keys or d.name.rsplit('-', 1)[-1]}" if shared else d.name.rsplit("-", 1)[0]
            for d, (shared, keys) in zip(dirs, _distinctions(dirs))]


def _experiment_dir(experiment: Path) -> Path:
    """``<preset>-<hash>/`` of a run directory of one seed, or the experiment directory itself."""
    return experiment.parent if (experiment / "metrics.csv").is_file() else experiment


def _distinctions(dirs: list[Path]) -> list[tuple[bool, str]]:
    """Per experiment directory: whether another of ``dirs`` has its preset, and then the
    config keys whose values differ among them (``sharing.bandwidth=0.01``; "" where none
    does)."""
    presets = [d.name.rsplit("-", 1)[0] for d in dirs]
    found = [(False, "")] * len(dirs)
    for preset in {p for p in presets if presets.count(p) > 1}:
        same = [i for i, p in enumerate(presets) if p == preset]
        configs = [_flat(_saved_config(dirs[i])) for i in same]
        keys = sorted({k for c in configs for k in c if k != "seed" and len({repr(other.get(k)) for other in configs}) > 1})
        for i, config in zip(same, configs):
            found[i] = (True, " ".join(f"{k}={config.get(k)}" for k in keys[:3]) + (" ..." if len(keys) > 3 else ""))
    return found


def _saved_config(experiment: Path) -> dict[str, Any]:
    """The config.yaml of an experiment's first seed that has one ({} where none has)."""
    for run in seed_dirs(experiment):
        if (run / "config.yaml").is_file():
            return yaml.safe_load((run / "config.yaml").read_text()) or {}
    return {}


def plot_runs(
    experiments: list[Path],
    out: Path,
    key: str = "episode_reward_mean",
    bin_size: int = 8000,
    alpha: float | None = 0.3,
    title: str | None = None,
    baseline: tuple[str, float] | None = None,
) -> Path:
    """One curve per experiment (mean +- std across its seeds), written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for experiment, name in zip(experiments, curve_names(experiments)):
        runs = [read_metrics(d) for d in seed_dirs(experiment)]
        if not runs:
            raise RelayRLError(f"no metrics.csv under {experiment} nor in its folders: give run or experiment directories")
        steps, mean, std, count = aggregate(runs, key, bin_size)
        if not len(steps):
            raise RelayRLError(f"no {key!r} values in {experiment}: pick a column of its metrics.csv")
        if alpha is not None:
            mean, std = smooth(mean, alpha), smooth(std, alpha)
        ax.plot(steps, mean, label=seeds_label(name, steps, count))
        ax.fill_between(steps, mean - std, mean + std, alpha=0.2)
    if baseline is not None:
        ax.axhline(baseline[1], color="gray", linestyle="--", label=baseline[0])
    ax.set_xlabel("environment steps")
    ax.set_ylabel(key.replace("_", " "))
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


# scheme table (<run dir>/<name>.csv) -> (the column that names a line, the value drawn per round)
ROUND_TABLES = {"tournament": ("policy", "elo"), "pbt": ("member", "mean_return"), "selfplay": (None, "wins")}


def plot_rounds(runs: list[Path], out: Path) -> Path:
    """The per-round tables of the schemes in these run directories: one panel per scheme,
    one line per policy (tournament Elo, PBT members' mean returns) or per run (self-play
    wins against the drawn snapshot)."""
    import csv

    plt = pyplot()
    found = {name: [(run, run / f"{name}.csv") for experiment in runs for run in seed_dirs(experiment) if (run / f"{name}.csv").is_file()] for name in ROUND_TABLES}
    found = {name: tables for name, tables in found.items() if tables}
    if not found:
        raise RelayRLError(f"no scheme table ({', '.join(f'{n}.csv' for n in ROUND_TABLES)}) in {', '.join(map(str, runs))}: --rounds draws "
                           "what a tournament, PBT or self-play wrote each round; a run of rounds without such a scheme (a curriculum) has "
                           "its curve in relayrl plot without --rounds")
    fig, axes = plt.subplots(1, len(found), figsize=(6 * len(found), 4.2), squeeze=False)
    for ax, (name, tables) in zip(axes[0], found.items()):
        by, value = ROUND_TABLES[name]
        for run, path in tables:
            with path.open() as handle:
                rows = list(csv.DictReader(handle))
            for line in sorted({r[by] for r in rows}) if by else [None]:
                mine = [r for r in rows if by is None or r[by] == line]
                label = f"{run.parent.name}/{run.name}" + (f" {line}" if line else "")
                ax.plot([int(r["round"]) for r in mine], [float(r[value]) for r in mine], marker=".", label=label)
        ax.set_title(name)
        ax.set_xlabel("round")
        ax.set_ylabel(value.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_if_drawn(plt, fig, out, True, "per-round tables")
    return out


def mean_std(values: list[float]) -> str:
    """"mean (std)" across seeds (population std); a single seed has no spread, so just its value."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{np.mean(values):.2f} ({np.std(values):.2f})"


def summary_table(experiments: list[Path], at: int, bin_size: int = 8000, keys: tuple[str, ...] = ("episode_reward_mean", "eval_reward_mean")) -> str:
    """Markdown table: per experiment, mean (std) across seeds of each key in the bin
    containing env step ``at`` (the paper's Table 1 style)."""
    target_bin = at // bin_size * bin_size
    lines = ["| experiment | seeds | " + " | ".join(keys) + " |", "|---|---:|" + "---:|" * len(keys)]
    for experiment, (_, differs) in zip(experiments, _distinctions([_experiment_dir(e) for e in experiments])):
        runs = [read_metrics(d) for d in seed_dirs(experiment)]
        cells = []
        for key in keys:
            values = [b[target_bin] for b in (binned(rows, key, bin_size) for rows in runs) if target_bin in b]
            cells.append(f"{mean_std(values)}, n={len(values)}" if values else "not reached")
        name = f"{experiment.parent.name}/{experiment.name}" if (experiment / "metrics.csv").is_file() else experiment.name
        lines.append(f"| {name}{f' ({differs})' if differs else ''} | {len(runs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pyplot():
    """matplotlib.pyplot on the file-only backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_if_drawn(plt, fig, out: Path, drew: bool, title: str) -> Path | None:
    """Writes the figure only if it shows data (a stale file is removed)."""
    fig.suptitle(title)
    fig.tight_layout()
    if drew:
        fig.savefig(out, dpi=110)
    else:
        out.unlink(missing_ok=True)
    plt.close(fig)
    return out if drew else None


def finish_panel(ax, title: str, ylabel: str, xlabel: str = "environment steps") -> None:
    """A panel's title, axis labels and grid, and its legend once it has curves."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
