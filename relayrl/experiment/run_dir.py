"""A run's directory, ``<runs root>/<preset>-<config hash>/<seed>/`` (DESIGN.md §5-6): its
lock, its config as trained, its provenance (one entry per start or resume) and its
checkpoints."""

import csv
import io
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import yaml

import relayrl
from relayrl.core.errors import CheckpointError, ConfigError, RelayRLError
from relayrl.experiment.checkpoint import CONFIG_FILE, MANIFEST, checkpoint_steps, list_checkpoints, load_checkpoint, save_checkpoint, write_atomically
from relayrl.experiment.config import RunConfig
from relayrl.experiment.identity import check_resumable, run_dir_for
from relayrl.experiment.run_lock import RunLock


def _git_revision() -> str:
    """The commit relayrl runs from, marked ``+changes`` where the package's tracked files
    differ from it (a run from an uncommitted change is then not taken for the commit's)."""
    package = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=package, capture_output=True, text=True, timeout=5)
        if head.returncode != 0 or not head.stdout.strip():
            return "unknown"
        status = ["git", "status", "--porcelain", "--untracked-files=no", "--", "."]
        changed = subprocess.run(status, cwd=package, capture_output=True, text=True, timeout=5).stdout.strip()
        return head.stdout.strip() + ("+changes" if changed else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
    except OSError:
        names = []
    return names[0] if names else platform.processor() or platform.machine()


# Variables that limit the vector instructions torch's CPU kernels use (oneDNN's convolutions,
# MKL's matrix products, ATen's own): on one machine, limiting oneDNN alone changes a run's
# metrics (docs/results/same_numbers/table_isa_onednn_avx.md).
ISA_LIMITS = ("DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")


def isa_limits() -> dict[str, str]:
    """Those of ``ISA_LIMITS`` set in this process's environment, with their values."""
    return {name: os.environ[name] for name in ISA_LIMITS if name in os.environ}


def provenance() -> dict[str, Any]:
    """Where a run (or a resumed part of it) was trained. The CPU, the vector instructions
    torch uses and any limits set on them are recorded because the same seed and code give
    other floating-point sums, so other metrics, on another kind of processor."""
    import pettingzoo

    return {
        "relayrl": relayrl.__version__,
        "git_revision": _git_revision(),
        "python": sys.version.split()[0],
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "pettingzoo": pettingzoo.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_name(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "isa_limits": isa_limits(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


class RunDirectory:
    """The directory of one run. Checked when the run is built (before anything is
    allocated): checkpoint folders without a complete checkpoint are refused (resuming from
    0 would overwrite the metrics), and a resume may change only the runtime settings of the
    recorded config (``changes`` are those it makes)."""

    def __init__(self, path: Path, config: RunConfig, built_with: tuple[str, ...] = ()) -> None:
        self.path = path
        self.config = config
        self.built_with = built_with  # the Python API's factories that built this run's env or networks
        self.checkpoints = path / "checkpoints"
        self.lock = RunLock(path)
        self.lock.check()  # before anything is built for a run another process trains
        self.changes: dict[str, tuple[Any, Any]] = {}
        folders = sorted(self.checkpoints.glob("step_*")) if self.checkpoints.is_dir() else []
        complete = list_checkpoints(self.checkpoints)
        if folders and not complete:
            raise CheckpointError(
                f"{self.checkpoints} has {len(folders)} checkpoint folder(s) ({', '.join(f.name for f in folders[-3:])}) "
                f"but none is complete (each lacks its {MANIFEST}); nothing was resumed or changed. Restore a "
                f"checkpoint there, or move {path} away to train from step 0"
            )
        saved = path / CONFIG_FILE
        if complete and saved.is_file():
            self.changes = check_resumable(yaml.safe_load(saved.read_text()), config, str(path))

    def open(self) -> None:
        """Takes the lock; removes what a crash during a save left."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        for tmp in self.checkpoints.glob(".tmp_*"):
            shutil.rmtree(tmp, ignore_errors=True)

    def latest(self) -> Path | None:
        found = list_checkpoints(self.checkpoints)
        return found[-1] if found else None

    def resume(self, load: Callable[[dict[str, Any], str], None]) -> bool:
        """Hands the newest checkpoint's state and path to ``load``; False where there is
        none. A checkpoint without an entry ``load`` reads was written by another relayrl
        revision: refused with the place that names the revision."""
        latest = self.latest()
        if latest is None:
            return False
        try:
            load(load_checkpoint(latest), str(latest))
        except RelayRLError:  # the load's own refusals (a changed config, a mismatched policy) say what is wrong
            raise
        except KeyError as missing:
            raise CheckpointError(
                f"{latest} has no entry {missing}: another relayrl revision wrote it (the commit is in {self.path / 'provenance.yaml'}); "
                "resume it with that revision, or start a new run directory"
            ) from None
        except (IndexError, AttributeError, TypeError, ValueError, RecursionError) as error:
            raise CheckpointError(
                f"{latest} does not hold a state this run resumes from ({type(error).__name__}: {str(error)[:200]}); nothing in it "
                "was run. Resume from a checkpoint relayrl wrote for this run, or start a new run directory"
            ) from None
        return True

    def record_start(self, resumed_at: int, policy_sources: dict[str, str]) -> None:
        """Writes config.yaml (at the start, or where a resume changed settings) and appends
        this start to provenance.yaml: the machine and code, where frozen policies' networks (and those learning ones started from)
        came from, and the settings a resume changed."""
        # a budget the run has passed trains nothing: its config stays the one it was trained with
        if resumed_at == 0 or (self.changes and resumed_at < self.config.total_steps):
            write_atomically(self.path / CONFIG_FILE, yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False))
        entry = {**provenance(), "resumed_at": resumed_at}
        if self.built_with:
            entry["built_with"] = list(self.built_with)
        if self.changes:
            entry["changed"] = {key: list(values) for key, values in self.changes.items()}
        if policy_sources:
            entry["policies_from"] = policy_sources
        with (self.path / "provenance.yaml").open("a") as handle:
            yaml.safe_dump([entry], handle, sort_keys=False)

    def save(self, env_steps: int, state: dict[str, Any], policies: dict[str, Any]) -> Path:
        return save_checkpoint(self.checkpoints, env_steps, state, self.config.keep_checkpoints, policies)

    def kept(self) -> str:
        """What a run stopped now keeps."""
        latest = self.latest()
        return f"the last checkpoint {latest.name} and the metrics so far are kept" if latest else "no checkpoint was written"

    def resume_hint(self) -> str:
        """How this run is continued: the CLI's resume, or, where the user's code built its
        env or networks, the same call from Python."""
        return python_resume(self.path, self.built_with) if self.built_with else f"relayrl resume {self.path}"

    def saved_at(self, env_steps: int) -> bool:
        latest = self.latest()
        return latest is not None and checkpoint_steps(latest) == env_steps

    def write_table(self, name: str, rows: list[dict[str, Any]]) -> None:
        """A scheme's table as ``<name>.csv``, replaced whole."""
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
        write_atomically(self.path / f"{name}.csv", text.getvalue())

    def release(self) -> None:
        self.lock.release()


def python_resume(path: Path, built_with: Sequence[str]) -> str:
    """The Python call that continues the run in ``path`` built with these factories."""
    return f"train(<its config>, out={str(path.parent.parent)!r}, {', '.join(f'{name}=...' for name in built_with)}) in Python"


def saved_config(run_dir: Path) -> dict[str, Any]:
    """The config a run directory recorded (its ``config.yaml``), or an error naming what is
    wrong: not a run directory (with the runs inside it, where it holds some), or a damaged
    file."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        inside = sorted(p.parent for p in (*run_dir.glob(f"*/{CONFIG_FILE}"), *run_dir.glob(f"*/*/{CONFIG_FILE}")))
        shown = ", ".join(map(str, inside[:4])) + (", ..." if len(inside) > 4 else "")
        where = f": the runs in it are {shown}" if inside else "; runs live in runs/<preset>-<hash>/<seed>/"
        raise RelayRLError(f"{run_dir} is not a run directory (no config.yaml){where}")
    try:
        saved = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise RelayRLError(f"{path} is not readable YAML ({str(error).splitlines()[0]}): restore it (its checkpoints' state.json holds the config)") from None
    if not isinstance(saved, dict):
        raise RelayRLError(f"{path} holds no config mapping: restore it (its checkpoints' state.json holds the config)")
    return saved


def built_with(path: Path) -> list[str]:
    """The factories from Python that built the run in ``path`` (its provenance entries'
    ``built_with``): what the CLI cannot rebuild."""
    try:
        entries = yaml.safe_load((path / "provenance.yaml").read_text()) or []
    except (OSError, yaml.YAMLError):
        return []
    names = [name for entry in entries if isinstance(entry, dict) for name in entry.get("built_with", [])]
    return sorted(set(names))


def pretrained_run(preset: str, seed: int, runs_root: Path | None) -> Path:
    """The finished run of ``preset`` and ``seed`` under ``runs_root`` (a frozen policy's
    ``pretrained``), or a clear error naming the command that trains it."""
    from relayrl.experiment.presets import load_preset

    if runs_root is None:
        raise ConfigError(f"pretrained={preset!r} is looked up under a run directory's runs root; without one pass checkpoint=PATH")
    config = load_preset(preset).model_copy(update={"seed": seed})
    run = run_dir_for(config, runs_root)
    done = list_checkpoints(run / "checkpoints")
    if not done or checkpoint_steps(done[-1]) < config.total_steps:
        have = f"it stopped at {checkpoint_steps(done[-1]):,} env steps" if done else "it has not been run"
        raise CheckpointError(
            f"pretrained opponents {preset} seed {seed} are not complete ({have}; needs {config.total_steps:,}): "
            f"run relayrl train {preset} --seed {seed} --out {runs_root}"
        )
    return run
