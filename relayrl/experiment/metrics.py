"""Metrics rows to CSV (tidy, one row per report) and TensorBoard."""

import csv
import math
from pathlib import Path

# Stable column names; the first ones are what issue reports and plots read.
COLUMNS = (
    "env_steps",
    "agent_steps",
    "updates",
    "episodes",
    "episode_reward_mean",
    "episode_reward_mean_100",
    "eval_reward_mean",
    "episode_len_mean",
    "bandwidth_actual",
    "transitions_relayed",
    "bytes_relayed",
    "td_loss",
    "grad_norm",
    "epsilon",
    "sps",
    "updates_per_s",
    "wall_s",
)


class MetricsWriter:
    """Appends rows to ``metrics.csv`` and mirrors them to TensorBoard under stable names."""

    def __init__(self, run_dir: Path, resume_at: int | None = None, extra_columns: tuple[str, ...] = ()) -> None:
        self.path = run_dir / "metrics.csv"
        self.columns = COLUMNS + tuple(extra_columns)  # per-team columns of multi-team runs
        if resume_at is not None and self.path.exists():
            self._truncate_after(resume_at)
        new = not self.path.exists()
        self._file = self.path.open("a", newline="")
        self._csv = csv.DictWriter(self._file, fieldnames=self.columns)
        if new:
            self._csv.writeheader()
        from torch.utils.tensorboard import SummaryWriter

        self._tb = SummaryWriter(str(run_dir / "tb"), purge_step=resume_at)

    def _truncate_after(self, env_steps: int) -> None:
        """Rows written after the checkpoint we resume from are produced again: drop them."""
        with self.path.open(newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if int(float(r["env_steps"])) <= env_steps]
        with self.path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(rows)

    def write(self, row: dict[str, float]) -> None:
        self._csv.writerow({k: row.get(k, math.nan) for k in self.columns})
        self._file.flush()
        step = int(row["env_steps"])
        for key, value in row.items():
            if key != "env_steps" and isinstance(value, (int, float)) and math.isfinite(value):
                self._tb.add_scalar(key, value, step)
        self._tb.flush()

    def close(self) -> None:
        self._file.close()
        self._tb.close()


def read_metrics(run_dir: Path) -> list[dict[str, float]]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return [{k: float(v) if v not in ("", None) else math.nan for k, v in r.items()} for r in csv.DictReader(handle)]
