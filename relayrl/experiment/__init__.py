"""Experiment layer: configs and presets, the training loop, metrics, checkpoints, plots.

Python API::

    from relayrl.experiment import load_preset, train
    config = load_preset("pursuit-super-quantile").model_copy(update={"total_steps": 50_000})
    run = train(config, out="runs")

or from policies by id, a match list and a step budget (paper 004, figure 5)::

    from relayrl.experiment import train_policies
    policies = {"super": {"sharing": {"select": "quantile"}}, "idle": {"kind": "random"}}
    match = [{"pursuer": ["super"] * 6 + ["idle"] * 2}]
    run = train_policies(policies, match, 100_000, env="pursuit", scale=4)
"""

import importlib
from typing import Any

# where each name of the API lives: imported on first use, so that a command that needs none
# of them (relayrl --help, list) does not import torch
_EXPORTS = {
    "Factories": "relayrl.experiment.build",
    "build_run": "relayrl.experiment.build",
    "Run": "relayrl.experiment.run",
    "RunConfig": "relayrl.experiment.config",
    "build_config": "relayrl.experiment.config",
    "apply_overrides": "relayrl.experiment.overrides",
    "load_preset": "relayrl.experiment.presets",
    "preset_dict": "relayrl.experiment.presets",
    "preset_names": "relayrl.experiment.presets",
    "run_dir_for": "relayrl.experiment.identity",
    "train": "relayrl.experiment.api",
    "train_policies": "relayrl.experiment.api",
    "load_run": "relayrl.experiment.api",
    "load_policies": "relayrl.experiment.checkpoint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'relayrl.experiment' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
