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


RELEASE = """
import numpy as np
from relayrl.core.memory import keep_freed_memory, release_freed_memory
def rss():
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmRSS")).split()[1]) // 1024
keep_freed_memory()
rows = [np.ones((1000, 1000), np.float32) for _ in range(100)]  # 400 MB, each block from the heap
rows.append(np.ones(1, np.float32))  # a live block above them: the heap's top cannot shrink
del rows[:-1]
kept = rss()
released = release_freed_memory()
print(kept, rss(), released)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_release_returns_the_freed_memory_that_keep_holds() -> None:
    """A resume copies the checkpoint's arrays into the replays and frees them; a process
    that keeps freed memory would hold both copies until it returns them."""
    out = subprocess.run([sys.executable, "-c", RELEASE], check=True, capture_output=True, text=True).stdout.split()
    kept, after, released = int(out[0]), int(out[1]), out[2] == "True"
    assert released and kept - after > 300, (kept, after)
