"""Metrics rows to CSV (tidy, one row per report) and TensorBoard."""

import csv
import math
from pathlib import Path

from relayrl.core.errors import RelayRLError

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

    def __init__(self, run_dir: Path, resume_at: int = 0, rows: int | None = None, extra_columns: tuple[str, ...] = ()) -> None:
        """``resume_at``/``rows``: the checkpoint a run resumes from and how many rows had been
        written when it was taken; later rows are written again by the resumed run."""
        self.path = run_dir / "metrics.csv"
        self.columns = COLUMNS + tuple(extra_columns)  # per-team columns of multi-team runs
        if self.path.exists() and not self.path.read_text().strip():
            self.path.unlink()  # an empty file (a crash before its header): written anew
        self.rows = self._keep(resume_at, rows) if self.path.exists() else 0
        new = not self.path.exists()
        self._file = self.path.open("a", newline="")
        self._csv = csv.DictWriter(self._file, fieldnames=self.columns)
        if new:
            self._csv.writeheader()
        from torch.utils.tensorboard import SummaryWriter

        self._tb = SummaryWriter(str(run_dir / "tb"), purge_step=resume_at)

    def _keep(self, env_steps: int, count: int | None) -> int:
        """Drops the rows written after the checkpoint (at most ``count`` rows up to
        ``env_steps`` stay). The file is rewritten only if rows go or its columns are not
        this run's (a run begun by an earlier relayrl: the new columns stay empty in its old
        rows), through a temporary file and a rename, so a failed write never truncates it."""
        with self.path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            header = list(reader.fieldnames or [])
        try:
            steps = [int(float(r["env_steps"])) for r in rows]
        except (KeyError, TypeError, ValueError):
            bad = next(i for i, r in enumerate(rows) if not _is_number(r.get("env_steps")))
            raise RelayRLError(
                f"{self.path} line {bad + 2} is not a metrics row (env_steps {rows[bad].get('env_steps')!r}): remove that line, "
                f"or move the file away (the resumed run then writes its rows from the checkpoint on), then resume"
            ) from None
        kept = [r for r, step in zip(rows, steps) if step <= env_steps][:count]
        if len(kept) == len(rows) and header == list(self.columns):
            return len(kept)
        tmp = self.path.with_name(f".tmp_{self.path.name}")
        try:
            with tmp.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=self.columns, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(kept)
            tmp.replace(self.path)
        except OSError as error:
            raise RelayRLError(
                f"could not rewrite {self.path} with this run's columns and without the {len(rows) - len(kept)} row(s) after the "
                f"checkpoint ({error.strerror or error}); it is unchanged. Free disk space, then resume"
            ) from None
        finally:
            tmp.unlink(missing_ok=True)
        return len(kept)

    def write(self, row: dict[str, float]) -> None:
        self._csv.writerow({k: row.get(k, math.nan) for k in self.columns})
        self._file.flush()
        self.rows += 1
        step = int(row["env_steps"])
        for key, value in row.items():
            if key != "env_steps" and isinstance(value, (int, float)) and math.isfinite(value):
                self._tb.add_scalar(key, value, step)
        self._tb.flush()

    def close(self) -> None:
        self._file.close()
        self._tb.close()


def _is_number(text: object) -> bool:
    try:
        float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def read_metrics(run_dir: Path) -> list[dict[str, float]]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return [{k: float(v) if v not in ("", None) else math.nan for k, v in r.items()} for r in csv.DictReader(handle)]
