"""``keep_freed_memory``: a process that frees a large tensor gets the next one from the
memory it holds, without fresh pages from the kernel (each process measured on its own;
torch's CPU tensors, which unlike numpy's large arrays ask for no huge pages)."""

import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
import torch
from relayrl.core.memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(2):  # 64 MB, allocated, written and freed twice before counting (the heap settles)
    torch.ones(16 << 20)
start = faults()
for _ in range(5):
    torch.ones(16 << 20)
print(faults() - start)
"""


def _faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_a_freed_large_tensor_is_reused_without_fresh_pages_once_memory_is_kept() -> None:
    default, kept = _faults("default"), _faults("keep")
    if default < 5 * 1000:  # 64 MB is 16,384 pages of 4 KB; far fewer: huge pages serve it
        pytest.skip(f"this kernel served five 64 MB tensors with {default} page faults (huge pages): nothing to reduce")
    assert kept < default / 20, (default, kept)
