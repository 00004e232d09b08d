"""Atomic, verified checkpoints: ``checkpoints/step_<env_steps>/`` with a sha256 manifest.

A checkpoint is written to a temporary folder and renamed into place, so a crash or
Ctrl-C during the write never leaves a half checkpoint under a real name; on load every
file is checked against the manifest, so a corrupt checkpoint is detected, not loaded.
"""

import hashlib
import json
import pickle
import shutil
from pathlib import Path
from typing import Any

from relayrl.core.errors import CheckpointError
from relayrl.core.resources import free_disk, human_bytes

STATE_FILE = "state.pkl"
POLICY_FILE = "policy.pkl"  # the teams' online networks alone: for frozen opponents and evaluation
MANIFEST = "manifest.json"
CONFIG_FILE = "config.yaml"  # a run directory's config, as its runs were trained with


def write_atomically(path: Path, text: str) -> None:
    """Replaces ``path`` with ``text`` through a temporary file and a rename: a failed write
    (a full disk) leaves the old file whole."""
    tmp = path.with_name(f".tmp_{path.name}")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def save_checkpoint(
    directory: Path, env_steps: int, state: dict[str, Any], keep: int, policy: dict[str, Any] | None = None
) -> Path:
    """Writes ``state`` (everything needed to resume) and, if given, ``policy`` (the networks
    alone, small enough to load without the replays) as one checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{env_steps:010d}"
    tmp = directory / f".tmp_step_{env_steps:010d}"
    shutil.rmtree(tmp, ignore_errors=True)
    files = {STATE_FILE: state} if policy is None else {STATE_FILE: state, POLICY_FILE: policy}
    try:
        tmp.mkdir()
        for name, content in files.items():
            with (tmp / name).open("wb") as handle:
                pickle.dump(content, handle, protocol=pickle.HIGHEST_PROTOCOL)
        manifest = {"env_steps": env_steps, "files": {name: _sha256(tmp / name) for name in files}}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        kept = list_checkpoints(directory)
        previous = f"the previous checkpoint {kept[-1].name} is intact" if kept else "no earlier checkpoint exists"
        raise CheckpointError(
            f"could not write checkpoint {final.name} in {directory} ({error.strerror or error}; "
            f"{human_bytes(free_disk(directory))} free there); {previous} and the metrics so far are kept. "
            f"Free disk space or set keep_checkpoints=1, then resume"
        ) from None
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(directory)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints (with a manifest), oldest first."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("step_*") if (p / MANIFEST).is_file())


def load_checkpoint(path: Path, file: str = STATE_FILE) -> dict[str, Any]:
    """Loads one file of a checkpoint after checking it against the manifest."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise CheckpointError(f"{path} has no {MANIFEST}: incomplete checkpoint; resume from another one")
    manifest = json.loads(manifest_path.read_text())
    if file not in manifest["files"]:
        raise CheckpointError(f"checkpoint {path} has no {file} (written by an older relayrl)")
    target = path / file
    if not target.is_file() or _sha256(target) != manifest["files"][file]:
        raise CheckpointError(
            f"checkpoint {path} is corrupt ({file} does not match its sha256 in {MANIFEST}); "
            f"delete it to resume from the previous checkpoint"
        )
    with target.open("rb") as handle:
        return pickle.load(handle)


def has_file(path: Path, file: str) -> bool:
    """Whether the checkpoint's manifest lists ``file`` (older checkpoints lack the policy file)."""
    manifest = path / MANIFEST
    return manifest.is_file() and file in json.loads(manifest.read_text())["files"]


def checkpoint_steps(path: Path) -> int:
    """The env step a checkpoint directory ``step_<n>`` was taken at."""
    return int(path.name.split("_")[1])
