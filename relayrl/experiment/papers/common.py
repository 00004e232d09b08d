"""What several papers' reproductions share: their options' values, the copies of the runs'
metrics a report reads, final rewards, table cells across seeds and learning curves."""

import argparse
import math
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from relayrl.core.errors import RelayRLError
from relayrl.experiment.metrics import read_metrics
from relayrl.experiment.plots import aggregate, mean_std, seeds_label
from relayrl.experiment.presets import load_preset

Rows = list[dict[str, float]]


def option_values(given: list[str] | None, known: Collection[str], what: str, default: Collection[str] | None = None) -> list[str]:
    """The values of a ``reproduce`` option (``default``, else every ``known`` one, when it is
    not given); one not ``known`` is an error that lists them."""
    values = list(given or (known if default is None else default))
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise RelayRLError(f"unknown {what}(s) {unknown}; choose from {', '.join(known)}")
    return values


def no_studies(args: argparse.Namespace, results: Path) -> list[str]:
    """The ``studies`` of a paper that measures nothing outside its grid."""
    return []


def run_copies(preset: str, results: Path) -> list[Path]:
    """The seed directories of the preset's configuration kept under ``results/runs``
    (copies made by ``grid.collect``, matched by config hash)."""
    config_hash = load_preset(preset).config_hash()
    return [seed for experiment in sorted((results / "runs").glob(f"*-{config_hash}")) for seed in sorted(experiment.iterdir())]


def runs_of(preset: str, results: Path) -> list[Rows]:
    """Metrics of every seed of the preset's configuration kept under ``results/runs``."""
    return [read_metrics(seed) for seed in run_copies(preset, results) if (seed / "metrics.csv").is_file()]


def final_reward(rows: Rows, step: int, last: int, *, after_step: bool = False, partial: bool = False) -> float:
    """Mean of the last ``last`` greedy evaluations of a run that has reached ``step`` (NaN
    before): those at or before ``step``, or every one of the run with ``after_step``; fewer
    than ``last`` of them give NaN, or their mean with ``partial``."""
    evals = [r["eval_reward_mean"] for r in rows if (after_step or r["env_steps"] <= step) and not math.isnan(r["eval_reward_mean"])]
    if not rows or rows[-1]["env_steps"] < step or len(evals) < (1 if partial else last):
        return math.nan
    return float(np.mean(evals[-last:]))


def final_rewards(runs: list[Rows], step: int, last: int, *, after_step: bool = False, partial: bool = False) -> list[float]:
    """``final_reward`` of each run that has one."""
    values = (final_reward(r, step, last, after_step=after_step, partial=partial) for r in runs)
    return [v for v in values if not math.isnan(v)]


def first_reaching(rows: Rows, mark: float, key: str = "eval_reward_mean") -> int | None:
    """The first env step at which ``key`` (a greedy evaluation by default) reached ``mark``;
    None where it has not yet."""
    return next((int(r["env_steps"]) for r in rows if not math.isnan(r[key]) and r[key] >= mark), None)


def n_seeds(n: int) -> str:
    return f"{n} seed{'s' if n > 1 else ''}"


def seeds_cell(values: list[float]) -> str:
    """"mean (std) [n seeds]" of values that not every seed has yet."""
    return f"{mean_std(values)} [{n_seeds(len(values))}]"


def table_cell(values: list[float], runs: list[Rows], seeds: int) -> str:
    """One cell of a reproduction table: mean (std) of ``values`` across seeds, marked when
    fewer than ``seeds`` seeds have a value; for runs without a value yet, how far they are."""
    if values:
        partial = "" if len(values) >= seeds else f" [{len(values)}/{seeds} seeds]"
        return f"{mean_std(values)}{partial}"
    if not runs:
        return "not run"
    last = [int(r[-1]["env_steps"]) for r in runs if r]
    if not last:
        return "started"
    return f"running ({n_seeds(len(runs))} at {steps_span(last)} steps)"


def steps_span(steps: list[int]) -> str:
    """``12,000`` where every run reached the same env step, else ``8,000-12,000``."""
    low, high = min(steps), max(steps)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


Display = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def draw_curve(ax: Any, runs: list[Rows], key: str, label: str, bin_size: int = 1, display: Display | None = None, fill: float = 0.2) -> bool:
    """The mean across seeds of ``key`` in bins of ``bin_size`` env steps and a band of one
    std around it, or the (mean, half-width) that ``display`` makes of them; False when no
    run has reported ``key``."""
    steps, mean, std, count = aggregate(runs, key, bin_size)
    if not len(steps):
        return False
    mean, band = display(mean, std) if display else (mean, std)
    ax.plot(steps, mean, label=seeds_label(label, steps, count))
    ax.fill_between(steps, mean - band, mean + band, alpha=fill)
    return True


def write_tables(path: Path, text: list[str], figures: Iterable[Path | None]) -> list[Path]:
    """Writes the report's markdown to ``path``; returns it and the figures that were drawn."""
    path.write_text("\n".join(text))
    return [path, *(f for f in figures if f is not None)]
