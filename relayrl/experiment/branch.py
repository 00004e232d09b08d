"""A branch: a new run directory that continues another run from one of its checkpoints under
changed settings, so that two continuations of one checkpoint differ by that change alone.

What a branch may change is ``identity.BRANCH_KEYS`` (settings no checkpoint holds) and what
a resume may change; the new run directory is named by its own config hash, beside the run it
came from unless told otherwise. It holds the checkpoint (its state's config made the new
one), the metrics up to it, the source's provenance and an entry naming the branch; ``relayrl
resume`` trains it on.
"""

import shutil
from pathlib import Path

import yaml

from relayrl.core.errors import ConfigError, RelayRLError
from relayrl.experiment.checkpoint import CONFIG_FILE, checkpoint_steps, list_checkpoints, load_checkpoint, load_policies, save_checkpoint
from relayrl.experiment.config import RunConfig
from relayrl.experiment.identity import BRANCH_KEYS, RESUMABLE_KEYS, branchable, check_resumable, config_changes, run_dir_for
from relayrl.experiment.run_dir import provenance


def branch_run(run_dir: Path, before: RunConfig, after: RunConfig, at: int | None = None, out: Path | None = None) -> Path:
    """Writes the branch of ``run_dir`` (trained with ``before``) at its checkpoint of env
    step ``at`` (default: its latest) with the settings ``after``, under ``out`` (default: the
    runs root ``run_dir`` is in); returns the new run directory."""
    changes = config_changes(before.model_dump(mode="json"), after.model_dump(mode="json"))
    refused = sorted(key for key in changes if not branchable(key))
    if refused:
        shown = ", ".join(f"{key}: {changes[key][0]!r} -> {changes[key][1]!r}" for key in refused)
        raise ConfigError(
            f"a branch cannot change {shown}: it may change {', '.join(BRANCH_KEYS)} (also in a policy's section, "
            f"policies.<id>.) and what a resume may ({', '.join(RESUMABLE_KEYS)}); other settings are held in the "
            f"checkpoint's state or shape it, so train them as a new run (relayrl train ... KEY=VALUE)"
        )
    if all(key in RESUMABLE_KEYS for key in changes):
        raise RelayRLError(
            f"nothing to branch: {', '.join(changes) or 'no setting'} changes, which the run itself takes on "
            f"(relayrl resume {run_dir} KEY=VALUE); a branch changes one of {', '.join(BRANCH_KEYS)}"
        )
    found = list_checkpoints(run_dir / "checkpoints")
    chosen = [c for c in found if at is None or checkpoint_steps(c) == at]
    if not chosen:
        steps = ", ".join(f"{checkpoint_steps(c):,}" for c in found) or "none"
        raise RelayRLError(f"{run_dir} has no checkpoint at env step {at:,} (its checkpoints: {steps})" if at is not None
                           else f"{run_dir} has no checkpoint to branch from")
    checkpoint = chosen[-1]
    target = run_dir_for(after, out if out is not None else run_dir.parent.parent)
    if target.exists():
        raise RelayRLError(f"{target} exists: resume it (relayrl resume {target}), or move it away to branch again")
    state = load_checkpoint(checkpoint)
    check_resumable(state["config"], before, str(checkpoint))  # a checkpoint of this run, not another one's
    state["config"] = after.model_dump(mode="json")
    step = checkpoint_steps(checkpoint)
    try:
        save_checkpoint(target / "checkpoints", step, state, after.keep_checkpoints, load_policies(checkpoint))
        (target / CONFIG_FILE).write_text(yaml.safe_dump(after.model_dump(mode="json"), sort_keys=False))
        if (run_dir / "metrics.csv").is_file():  # rows after the checkpoint go when the branch resumes
            shutil.copy2(run_dir / "metrics.csv", target / "metrics.csv")
        history = (run_dir / "provenance.yaml").read_text() if (run_dir / "provenance.yaml").is_file() else ""
        entry = {**provenance(), "branched_from": str(checkpoint), "changed": {key: list(values) for key, values in changes.items()}}
        (target / "provenance.yaml").write_text(history + yaml.safe_dump([entry], sort_keys=False))
    except BaseException:  # nothing half-written stays under the branch's name
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target
