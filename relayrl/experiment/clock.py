"""The run's clock: everything that happens every so many env steps (a metrics report, a
greedy evaluation, a checkpoint) and the ends of rounds, read off the run's counters."""

import math
from dataclasses import dataclass


@dataclass
class Counters:
    """Where a run stands (saved in every checkpoint)."""

    env_steps: int = 0
    agent_steps: int = 0
    iterations: int = 0
    next_report: int = 0
    next_eval: float = 0  # math.inf where evaluations are off
    next_checkpoint: int = 0
    wall_s: float = 0.0
    metric_rows: int | None = None  # rows in metrics.csv when the checkpoint was taken
    round: int = 0  # the round the run is in (relayrl.arena.round)


class Clock:
    """Triggers by env step. ``report``, ``eval`` and ``checkpoint`` are due once the env
    steps reach their next mark and, once fired, move on by their interval past the current
    step (an interval of 0 never fires); ``round`` is due once the current round's budget
    (``round_ends``) is spent."""

    PERIODIC = ("report", "eval", "checkpoint")

    def __init__(self, counters: Counters, intervals: dict[str, int], round_ends: list[int]) -> None:
        self.counters = counters
        self.intervals = intervals
        self.round_ends = round_ends

    @staticmethod
    def start(intervals: dict[str, int]) -> Counters:
        """Counters at step 0, each trigger's first mark one interval in."""
        marks = {f"next_{name}": intervals[name] or math.inf for name in Clock.PERIODIC}
        return Counters(**marks)

    def due(self, name: str) -> bool:
        c = self.counters
        if name == "round":
            return bool(self.round_ends) and c.env_steps >= self.round_ends[c.round]
        return c.env_steps >= getattr(c, f"next_{name}")

    def fire(self, name: str) -> None:
        key = f"next_{name}"
        while getattr(self.counters, key) <= self.counters.env_steps:
            setattr(self.counters, key, getattr(self.counters, key) + self.intervals[name])
