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

STATE_FILE = "state.pkl"
MANIFEST = "manifest.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def save_checkpoint(directory: Path, env_steps: int, state: dict[str, Any], keep: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{env_steps:010d}"
    tmp = directory / f".tmp_step_{env_steps:010d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with (tmp / STATE_FILE).open("wb") as handle:
        pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
    manifest = {"env_steps": env_steps, "files": {STATE_FILE: _sha256(tmp / STATE_FILE)}}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
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


def load_checkpoint(path: Path) -> dict[str, Any]:
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise CheckpointError(f"{path} has no {MANIFEST}: incomplete checkpoint; resume from another one")
    manifest = json.loads(manifest_path.read_text())
    for name, expected in manifest["files"].items():
        file = path / name
        if not file.is_file() or _sha256(file) != expected:
            raise CheckpointError(
                f"checkpoint {path} is corrupt ({name} does not match its sha256 in {MANIFEST}); "
                f"delete it to resume from the previous checkpoint"
            )
    with (path / STATE_FILE).open("rb") as handle:
        return pickle.load(handle)
