"""``keep_freed_memory`` changes where memory comes from, never what is computed: the same
run trains to the same metrics with it on and off (each in its own process, since the
setting is the process's)."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from relayrl.core.memory import keep_freed_memory

RUN = ["pursuit-maddpg", "total_steps=1200", "report_interval=400", "eval.interval=0", "checkpoint_interval=1200",
       "centralised.random_steps=400", "centralised.batch_size=64", "--seed", "0"]
WALL_CLOCK = {"sps", "updates_per_s", "wall_s"}


def _metrics(out: Path, keep: bool) -> list[dict[str, str]]:
    subprocess.run([sys.executable, "-m", "relayrl.cli", "train", *RUN, f"keep_freed_memory={str(keep).lower()}", "--out", str(out)],
                   check=True, capture_output=True)
    (path,) = out.glob("*/0/metrics.csv")
    with path.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k not in WALL_CLOCK} for row in csv.DictReader(handle)]


def test_a_run_learns_the_same_numbers_with_freed_memory_kept_or_returned(tmp_path: Path) -> None:
    returned, kept = _metrics(tmp_path / "returned", False), _metrics(tmp_path / "kept", True)
    assert len(kept) == 3 and float(kept[-1]["updates"]) > 0
    assert kept == returned


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_glibc_takes_the_setting() -> None:
    assert keep_freed_memory()
