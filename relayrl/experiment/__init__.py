"""Experiment layer: configs and presets, the training loop, metrics, checkpoints, plots.

Python API::

    from relayrl.experiment import load_preset, train
    config = load_preset("pursuit-super-quantile").model_copy(update={"total_steps": 50_000})
    trainer = train(config, out="runs")
"""

from pathlib import Path

from relayrl.algos.dqn import NetworkFactory

from relayrl.experiment.config import RunConfig, apply_overrides, build_config
from relayrl.experiment.presets import load_preset, preset_dict, preset_names
from relayrl.experiment.trainer import Trainer, run_dir_for

__all__ = [
    "RunConfig",
    "Trainer",
    "apply_overrides",
    "build_config",
    "load_preset",
    "preset_dict",
    "preset_names",
    "run_dir_for",
    "train",
]


def train(
    config: RunConfig,
    out: str | Path | None = "runs",
    *,
    env_factory=None,
    network_factory: NetworkFactory | None = None,
    verbose: bool = True,
) -> Trainer:
    """Trains (or resumes, if the run directory has checkpoints) and returns the Trainer.
    ``out=None`` trains in memory without writing a run directory."""
    run_dir = run_dir_for(config, Path(out)) if out is not None else None
    trainer = Trainer(config, run_dir, env_factory=env_factory, network_factory=network_factory, verbose=verbose)
    try:
        trainer.train()
    finally:
        trainer.close()
    return trainer
