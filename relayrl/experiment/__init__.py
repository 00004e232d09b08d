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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relayrl.algos.dqn import NetworkFactory

from relayrl.experiment.config import RunConfig, build_config
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.presets import load_preset, preset_dict, preset_names
from relayrl.experiment.build import Factories, build_run
from relayrl.experiment.run import Run
from relayrl.experiment.run_dir import run_dir_for

__all__ = [
    "Factories",
    "Run",
    "RunConfig",
    "apply_overrides",
    "build_config",
    "build_run",
    "load_preset",
    "preset_dict",
    "preset_names",
    "run_dir_for",
    "train",
    "train_policies",
]


def train(
    config: RunConfig,
    out: str | Path | None = "runs",
    *,
    env_factory=None,
    network_factory: NetworkFactory | None = None,
    verbose: bool = True,
) -> Run:
    """Trains (or resumes, if the run directory has checkpoints) and returns the Run.
    ``out=None`` trains in memory without writing a run directory."""
    run_dir = run_dir_for(config, Path(out)) if out is not None else None
    run = build_run(config, run_dir, Factories(env_factory, network_factory), verbose)
    try:
        run.train()
    finally:
        run.close()
    return run


def train_policies(
    policies: Mapping[str, Mapping[str, Any]],
    match: Sequence[Mapping[str, Any]],
    steps: int,
    *,
    env: str | Mapping[str, Any] = "pursuit",
    scale: int = 1,
    seed: int = 0,
    out: str | Path | None = None,
    verbose: bool = True,
    **settings: Any,
) -> Run:
    """Trains ``policies`` (id -> its ``policies:`` entry) placed on the entities of ``env``
    (a name or an ``env:`` section) by ``match`` (one env copy's ``{group: ids}`` each),
    repeated ``scale`` times, for ``steps`` env steps. ``settings``: other config sections
    (``dqn``, ``sharing``, ``model``, ...). The same run as a YAML file with ``policies:``,
    ``match:``, ``scale:`` and ``total_steps:``, trained by ``relayrl train FILE.yaml``."""
    data = {
        "preset": settings.pop("preset", "policies"),
        "env": {"name": env} if isinstance(env, str) else dict(env),
        "policies": {pid: dict(p) for pid, p in policies.items()},
        "match": [dict(m) for m in match],
        "scale": scale,
        "total_steps": steps,
        "seed": seed,
        **settings,
    }
    return train(build_config(data), out, verbose=verbose)
