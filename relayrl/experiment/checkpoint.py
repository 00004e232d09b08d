"""Atomic, verified checkpoints of data: ``checkpoints/step_<env_steps>/`` with a sha256
manifest.

Everything is data (``relayrl.core.tree_files``): tensors in safetensors, arrays in npz
(the state's deflated where that halves them), the rest in JSON; nothing is unpickled on
load, so a checkpoint someone sent you (a frozen opponent, one to evaluate or resume)
cannot run code. A checkpoint is written to a temporary folder and renamed into place, so
a crash or Ctrl-C during the write never leaves a half checkpoint under a real name; on
load every file is checked against the manifest, so a corrupt checkpoint is detected, not
loaded.
"""

import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

from safetensors import SafetensorError

from relayrl.core.errors import CheckpointError
from relayrl.core.resources import free_disk, human_bytes
from relayrl.core.tree_files import read_tree, tree_files, write_tree
from relayrl.replay.buffer import ROWS

# everything a resume needs (state.safetensors + state.npz + state.json)
STATE = "state"
# the policies' acting networks alone (policy.*): what frozen opponents and evaluation
# load, small enough to read without the replays
POLICY = "policy"
MANIFEST = "manifest.json"
# a manifest's flag: the checkpoint holds policies' networks and no state (``keep_policies``)
POLICIES_ONLY = "policies_only"
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
    directory: Path, env_steps: int, state: dict[str, Any] | None, keep: int, policy: dict[str, Any] | None = None
) -> Path:
    """Writes ``state`` (everything needed to resume) and, if given, ``policy`` (the networks
    alone, as data: small enough to load without the replays, safe to load from others) as
    one checkpoint. Without ``state`` it is a checkpoint of policies only (``POLICIES_ONLY``
    in its manifest): frozen opponents load it, a resume refuses it."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step_{env_steps:010d}"
    tmp = directory / f".tmp_step_{env_steps:010d}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        files = list(write_tree(tmp / STATE, state, compress=True)) if state is not None else []
        if policy is not None:
            files += write_tree(tmp / POLICY, policy)
        manifest: dict[str, Any] = {"env_steps": env_steps, "files": {f.name: _sha256(f) for f in files}}
        if state is None:
            manifest[POLICIES_ONLY] = True
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    except (OSError, SafetensorError) as error:  # safetensors wraps the OSError of its own writes
        shutil.rmtree(tmp, ignore_errors=True)
        kept = list_checkpoints(directory)
        previous = f"the previous checkpoint {kept[-1].name} is intact" if kept else "no earlier checkpoint exists"
        raise CheckpointError(
            f"could not write checkpoint {final.name} in {directory} ({getattr(error, 'strerror', None) or error}; "
            f"{human_bytes(free_disk(directory))} free there); {previous} and the metrics so far are kept. "
            f"Free disk space or set keep_checkpoints=1, then resume"
        ) from None
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(directory)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints (with a manifest), oldest first: only names the writer gives
    (``step_`` and ten digits), so a copy a user set aside (``step_0000002000.bak``) is none."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("step_*") if re.fullmatch(r"step_\d{10}", p.name) and (p / MANIFEST).is_file())


def _verified(path: Path, *names: str) -> None:
    """Checks files of a checkpoint against its manifest's sha256."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        inner = path / "checkpoints" if (path / "checkpoints").is_dir() else path
        found = list_checkpoints(inner)
        if found:  # a run directory or its checkpoints folder, not one checkpoint
            raise CheckpointError(f"{path} is not a checkpoint but holds them: pass one of {inner}/step_* (the last: {found[-1]}; list_checkpoints lists them)")
        raise CheckpointError(f"{path} has no {MANIFEST}: incomplete checkpoint; resume from another one")
    manifest = json.loads(manifest_path.read_text())
    listed = manifest["files"]
    for name in names:
        if name not in listed and manifest.get(POLICIES_ONLY):
            raise CheckpointError(
                f"checkpoint {path} holds policies' networks only (kept for frozen opponents), not a run's "
                "state: it cannot be resumed or warm-started from; load it as a frozen policy (policies.<id>.checkpoint)"
            )
        if name not in listed:
            if any(f.endswith(".pkl") for f in listed):
                raise CheckpointError(
                    f"checkpoint {path} was written as pickles by an earlier relayrl; this one loads data only and never "
                    f"unpickles: continue the run with the relayrl that wrote it (its git revision is in the run's "
                    f"provenance.yaml), or train it again"
                )
            raise CheckpointError(f"checkpoint {path} has no {name} (not a checkpoint of this relayrl)")
        target = path / name
        if not target.is_file() or _sha256(target) != listed[name]:
            raise CheckpointError(
                f"checkpoint {path} is corrupt ({name} does not match its sha256 in {MANIFEST}); "
                f"delete it to resume from the previous checkpoint"
            )


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The run's full state (to resume a run), read as data after checking the files; the
    replays' rows stay in the file until the replays stream them in (``ROWS``)."""
    return _read(path / STATE, stream=ROWS)


def load_policies(path: str | Path) -> dict[str, Any]:
    """Every policy's acting networks, read as data after checking the files."""
    return _read(Path(path) / POLICY)


def keep_policies(checkpoint: Path, directory: Path, pids: list[str]) -> Path:
    """Policies ``pids``' acting networks from ``checkpoint``, written as a checkpoint of
    their own at the same env step under ``directory`` (``step_<n>``, policies only): a few
    MB where the run's checkpoint holds GB of replay, so it can be kept in a repository and
    drive frozen opponents on another machine."""
    saved = load_policies(checkpoint)
    missing = sorted(set(pids) - set(saved))
    if missing:
        raise CheckpointError(f"{checkpoint} holds policies {sorted(saved)}, not {missing}")
    return save_checkpoint(directory, checkpoint_steps(checkpoint), None, keep=1, policy={pid: saved[pid] for pid in pids})


def load_learner(path: Path, pid: str) -> dict[str, Any] | None:
    """Policy ``pid``'s learner algorithm state (networks, targets, optimisers, statistics)
    from the run's full state, without reading its replay; None where it did not learn."""
    return _read(path / STATE, ("policies", pid, "algorithm"))


def _read(stem: Path, at: tuple[str, ...] = (), stream: str | None = None) -> Any:
    """A tree of a checkpoint (or its subtree under the keys ``at``), after checking its
    files; files that are not data (a pickle where JSON or an array belongs) are refused,
    never executed."""
    _verified(stem.parent, *(f.name for f in tree_files(stem)))
    try:
        return read_tree(stem, at, stream)
    except (ValueError, UnicodeDecodeError, KeyError, IndexError, AttributeError, TypeError, RecursionError, MemoryError,
            zipfile.BadZipFile, SafetensorError) as error:
        raise CheckpointError(
            f"{stem.parent} holds files that are not relayrl checkpoint data ({type(error).__name__}: {str(error)[:200]}); "
            f"nothing in them was run. Use a checkpoint written by relayrl"
        ) from None


def checkpoint_steps(path: Path) -> int:
    """The env step a checkpoint directory ``step_<n>`` was taken at."""
    return int(path.name.split("_")[1])
