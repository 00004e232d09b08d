"""The Python API's two entry points: ``train`` a config, ``train_policies`` by id."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relayrl.algos.dqn import NetworkFactory
from relayrl.core.errors import ConfigError
from relayrl.envs.registry import EnvFactory
from relayrl.experiment.build import Factories, build_run
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints
from relayrl.experiment.config import RunConfig, build_config
from relayrl.experiment.run import Run
from relayrl.experiment.identity import factory_identity, run_dir_for


def train(
    config: RunConfig,
    out: str | Path | None = "runs",
    *,
    env_factory=None,
    network_factory: NetworkFactory | None = None,
    verbose: bool = True,
) -> Run:
    """Trains (or resumes, if the run directory has checkpoints) and returns the Run.
    ``out=None`` trains in memory without writing a run directory. ``env_factory``: an
    ``EnvFactory``, or a function that makes one PettingZoo ParallelEnv; the factories'
    names join the run directory's hash, so other factories train another run."""
    if env_factory is not None and not isinstance(env_factory, EnvFactory):
        if not callable(env_factory):
            raise ConfigError(f"env_factory must be a relayrl.envs.EnvFactory or a function that makes a PettingZoo ParallelEnv, got {env_factory!r}")
        env_factory = EnvFactory(env_factory)
    if network_factory is not None and not callable(network_factory):
        raise ConfigError(f"network_factory must be a function or class called as network_factory(P, obs_shape, A) -> torch.nn.Module, got {network_factory!r}")
    run_dir = run_dir_for(config, Path(out), factory_identity(env_factory, network_factory)) if out is not None else None
    done = list_checkpoints(run_dir / "checkpoints") if run_dir is not None else []
    if verbose and done and checkpoint_steps(done[-1]) >= config.total_steps:  # as the command line says it
        print(f"{run_dir} is already complete: its checkpoint is at {checkpoint_steps(done[-1]):,} env steps, "
              f"total_steps={config.total_steps:,}; nothing more is trained (the run is returned as it is)")
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
