"""A run's provenance names the commit its code came from, and says so when the package's
files differ from that commit."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import relayrl

PACKAGE = Path(relayrl.__file__).resolve().parent


def _revision(checkout: Path) -> str:
    code = "from relayrl.experiment.run_dir import provenance; print(provenance()['git_revision'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _git(checkout: Path, *args: str) -> str:
    identity = ["-c", "user.name=relayrl", "-c", "user.email=relayrl@example.org"]
    return subprocess.run(["git", *identity, *args], cwd=checkout, capture_output=True, text=True, check=True).stdout.strip()


def test_a_changed_package_is_marked_and_other_files_are_not(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "relayrl", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "results.md").write_text("results, not code\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "relayrl", "results.md")
    _git(tmp_path, "commit", "-q", "-m", "code")
    head = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "results.md").write_text("results, changed\n")
    assert _revision(tmp_path) == head
    with (tmp_path / "relayrl" / "replay" / "reuse.py").open("a") as handle:
        handle.write("\n# an uncommitted change\n")
    assert _revision(tmp_path) == head + "+changes"


def test_the_processor_is_recorded():
    from relayrl.experiment.run_dir import provenance

    entry = provenance()
    if not Path("/proc/cpuinfo").exists():
        pytest.skip("no /proc/cpuinfo to compare with")
    with open("/proc/cpuinfo") as handle:
        names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
    if names:  # aarch64's cpuinfo has no model name; cpu_name then falls back to platform
        assert entry["cpu"] == names[0]
    assert entry["torch_cpu_capability"] in {"NO AVX", "DEFAULT", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256"}


def test_limits_on_the_vector_instructions_are_recorded(monkeypatch):
    from relayrl.experiment.run_dir import ISA_LIMITS, provenance

    for name in ISA_LIMITS:
        monkeypatch.delenv(name, raising=False)
    assert provenance()["isa_limits"] == {}
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", "AVX2")
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    assert provenance()["isa_limits"] == {"DNNL_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
