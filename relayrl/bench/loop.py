"""The whole SUPER training loop: throughput, a profile by section, and a math-only run.

Loop: a preset's Run (default pursuit-super-quantile, SPEC §1.1 settings and training
intensity) runs past ``learning_starts`` to warm up, then a measured window with the
section timer on. Math-only: the same learner, replay (now pre-filled), batch size and
thread settings doing only what training must do per update (sample, update, priority
update), no env, no relay, no logging; its env steps/s is fragment_length / time per
update, since training takes one update per fragment_length env steps.
"""

import time
from dataclasses import dataclass

import numpy as np
import torch

from relayrl.bench.common import timed_training
from relayrl.experiment.config import build_config
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.presets import preset_dict
from relayrl.core.profiler import LOOP_SECTIONS
from relayrl.experiment.build import build_run
from relayrl.experiment.run import Run


@dataclass
class LoopResult:
    label: str
    env_steps_per_s: float
    updates_per_s: float  # per agent
    section_share: dict[str, float]
    math_env_steps_per_s: float
    math_updates_per_s: float

    @property
    def math_ratio(self) -> float:
        return self.env_steps_per_s / self.math_env_steps_per_s


def _math_only(run: Run, updates: int) -> float:
    """Seconds per update (sample + update + priority update) on the run's replay."""
    learner = next(iter(run.learners.values()))
    replay, algorithm, batch_size = learner.replay, learner.algorithm, learner.batch_size
    sync = torch.cuda.synchronize if learner.algorithm.device.type == "cuda" else (lambda: None)

    def one() -> None:
        batch = replay.sample(batch_size)
        td, _ = algorithm.update(batch.data, batch.weights)
        replay.update_priorities(batch.indices, np.abs(td))

    one()
    sync()
    start = time.perf_counter()
    for _ in range(updates):
        one()
    sync()
    return (time.perf_counter() - start) / updates


def measure(preset: str, overrides: list[str], steps: int, label: str, math_updates: int = 200) -> LoopResult:
    config = build_config(apply_overrides(preset_dict(preset), ["eval.interval=0", *overrides]))
    warmup = config.dqn.learning_starts + 1000
    config.total_steps = warmup
    run = build_run(config, None, verbose=False)
    try:
        run.train()
        math_before = _math_only(run, math_updates)
        seconds, env_steps, updates = timed_training(run, warmup + steps)
        math_after = _math_only(run, math_updates)
    finally:
        run.close()
    sections = dict(run.timer.seconds)
    sections["other"] = max(0.0, seconds - sum(sections.values()))
    fragment = config.dqn.fragment_length
    math_seconds = min(math_before, math_after)  # the faster math run: the stricter ratio
    return LoopResult(
        label=label,
        env_steps_per_s=env_steps / seconds,
        updates_per_s=updates / seconds,
        section_share={name: sections.get(name, 0.0) / seconds for name in (*LOOP_SECTIONS, "other")},
        math_env_steps_per_s=fragment / math_seconds,
        math_updates_per_s=1.0 / math_seconds,
    )
