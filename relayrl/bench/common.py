"""Timing helpers and the machine description shared by the benchmarks."""

import gc
import os
import platform
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from typing import TYPE_CHECKING

import numpy as np
import torch

from relayrl.experiment.run_dir import cpu_name

if TYPE_CHECKING:
    from relayrl.experiment.run import Run


def machine_description() -> str:
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    try:
        memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        memory_gb = float("nan")
    return (
        f"{cpu_name()}, {os.cpu_count()} cores, {memory_gb:.0f} GiB, {gpu}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, numpy {np.__version__}, pettingzoo {package_version('pettingzoo')}"
    )


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def best_of_rounds(fns: list[Callable[[], object]], calls: list[int], rounds: int) -> list[float]:
    """Seconds per call of each function: the callables alternate in rounds of ``calls[i]``
    calls; each keeps its best round, the one least disturbed by other processes."""
    best = [np.inf] * len(fns)
    for fn in fns:
        fn()  # warm-up: lazy allocations, caches
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                start = time.perf_counter()
                for _ in range(calls[i]):
                    fn()
                best[i] = min(best[i], (time.perf_counter() - start) / calls[i])
    finally:
        if enabled:
            gc.enable()
    return best


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    align = ["---" if i == 0 else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def timed_training(run: "Run", total_steps: int) -> tuple[float, int, int]:
    """Continues ``run`` to ``total_steps`` with its section timer on (synchronising CUDA
    at each section's end where the learners are there): the seconds it took and the env
    steps and updates it made."""
    learner = next(iter(run.learners.values()))
    run.timer.enabled = True
    if learner.algorithm.device.type == "cuda":
        run.timer.sync = torch.cuda.synchronize
    run.config.total_steps = total_steps
    steps0, updates0 = run.counters.env_steps, run.updates
    start = time.perf_counter()
    run.train()
    seconds = time.perf_counter() - start
    run.timer.enabled = False
    return seconds, run.counters.env_steps - steps0, run.updates - updates0
