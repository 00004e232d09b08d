"""Where a training process gets its memory from (glibc's malloc, the allocator under both
torch's and numpy's CPU arrays).

glibc serves blocks above its mmap threshold (128 KB at first, at most 32 MB) with fresh
pages from the kernel and returns them on free, so an update that builds a 40 MB critic
input (MADDPG's joint rows on Pursuit) takes about 10,000 page faults each time it runs:
building it costs 42 ms in fresh memory here, 6 ms in memory the process already holds.
``keep_freed_memory`` asks glibc to serve every block from its heap and to keep what is
freed at the heap's top for the next update. The values computed are the same
(tests/test_memory.py); the process keeps its peak memory instead of returning it. In
training runs the page faults per update fell to almost none in every run measured, and
MADDPG on Pursuit trains 1.3x faster (docs/results/benchmarks_marl.md); in a bare loop
allocating one 32-64 MB tensor some processes kept faulting, so it is a measured gain for
training, not a guarantee of glibc's.
"""

import ctypes
import ctypes.util
import sys
from typing import Any

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
TRIM_THRESHOLD = 2**31 - 1  # the largest the int parameter takes: freed memory stays
TOP_PAD = 64 << 20  # each growth of the heap takes 64 MB more than asked, for the next blocks


def _glibc() -> Any | None:
    """The C library where it is glibc on Linux (it has ``mallopt``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if getattr(libc, "mallopt", None) is not None else None  # musl and other C libraries have none


def keep_freed_memory() -> bool:
    """Makes this process's malloc reuse freed memory for large blocks instead of mapping
    fresh pages; True where it applied (Linux with glibc), False elsewhere (nothing changes)."""
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    # glibc still maps pages where the heap cannot grow, so no allocation fails for this
    return all(mallopt(param, value) == 1 for param, value in ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))


def release_freed_memory() -> bool:
    """Returns the memory free in the heap to the system (glibc's ``malloc_trim``); True where
    some went back. A resume calls it once: the checkpoint's arrays, copied into the replays and
    then freed, would otherwise stay with a process that keeps freed memory (Battle
    pretraining held 14.8 GB for its 7.3 GB replay)."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1
