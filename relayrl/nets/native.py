"""relayrl's C++ loops, compiled on first use against the installed torch.

``GRUSequence``'s loops over time run in C++ when a C++ compiler is present
(``gru_sequence.cpp``: the same operations in the same order as the Python loop, so the
same values to the last bit; 1.9x the Python loops at recurrent MAPPO's chunks, 1.28-1.42x
on its whole loop, docs/results/benchmarks_marl.md), and so do ``FusedOrderGRU``'s (torch's
GRU's values and gradients to the last bit; QMIX's update 1.16-1.20x). The library is built once per source, torch and
compiler (about 20 s) into ``$RELAYRL_CACHE`` or ``~/.cache/relayrl/native`` and loaded
with ``torch.ops.load_library``; every later process loads it in milliseconds. Without a
compiler, or when the build fails, relayrl warns once and runs the Python loops and torch's
GRU (the same values). ``RELAYRL_NATIVE=0`` turns the C++ loops off.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import torch

from relayrl.core.errors import RelayRLWarning

SOURCE = Path(__file__).with_name("gru_sequence.cpp")
_lock = threading.Lock()
_state: dict[str, Any] = {}  # "ops": the loaded namespace or None, once decided


def enabled() -> bool:
    """Whether the C++ loops are wanted (``RELAYRL_NATIVE``, default on)."""
    return os.environ.get("RELAYRL_NATIVE", "1").strip().lower() not in ("0", "false", "off", "no")


def cache_dir() -> Path:
    root = os.environ.get("RELAYRL_CACHE")
    return Path(root) / "native" if root else Path.home() / ".cache" / "relayrl" / "native"


def _command(compiler: str, source: Path, target: Path) -> list[str]:
    from torch.utils import cpp_extension

    libraries = cpp_extension.library_paths()
    return [
        compiler, "-O3", "-std=c++20", "-shared", "-fPIC",
        "-ffp-contract=off",  # torch rounds a product and a sum separately: no fused multiply-add
        "-w",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        *[f"-I{path}" for path in cpp_extension.include_paths()],
        str(source), "-o", str(target),
        *[f"-L{path}" for path in libraries], "-lc10", "-ltorch_cpu",
        *[f"-Wl,-rpath,{path}" for path in libraries],
    ]


def _build() -> Path:
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++)")
    key = hashlib.sha256()
    key.update(SOURCE.read_bytes())
    key.update(" ".join(_command(compiler, SOURCE, Path("out"))).encode())
    key.update(f"{torch.__version__} {sys.version}".encode())
    target = cache_dir() / f"gru_sequence-{key.hexdigest()[:16]}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # built under a private name and moved into place: processes building at once never load half a file
    handle, partial = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(handle)
    print(f"relayrl: building the C++ GRU loops into {target.parent} (once per machine, about 20 s)", file=sys.stderr, flush=True)
    try:
        result = subprocess.run(_command(compiler, SOURCE, Path(partial)), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{compiler} failed:\n{result.stderr[-2000:]}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def gru_ops() -> Any | None:
    """``torch.ops.relayrl_gru`` (``forward``, ``backward``), built and loaded on the first
    call; None when turned off or when it cannot be built (warned once)."""
    if not enabled():
        return None
    with _lock:
        if "ops" not in _state:
            try:
                torch.ops.load_library(str(_build()))
                _state["ops"] = torch.ops.relayrl_gru
            except Exception as error:  # any failure leaves the Python loops, which give the same values
                warnings.warn(
                    f"relayrl: the C++ GRU loops could not be built ({error}); running the Python loops "
                    "(the same values, slower). Set RELAYRL_NATIVE=0 to skip the attempt.",
                    RelayRLWarning, stacklevel=2,
                )
                _state["ops"] = None
        return _state["ops"]
