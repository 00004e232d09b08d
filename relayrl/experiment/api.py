"""The Python API's entry points: ``train`` a config, ``train_policies`` by id, and
``load_run`` a trained run to evaluate or act with."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from relayrl.algos.dqn import NetworkFactory
from relayrl.arena.policy import FrozenPolicy, RandomPolicy, ScriptedPolicy
from relayrl.core.errors import CheckpointError, ConfigError, RelayRLError
from relayrl.envs.registry import EnvFactory
from relayrl.experiment.build import Factories, build_run
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints, load_policies
from relayrl.experiment.config import RunConfig, build_config, validate_config
from relayrl.experiment.identity import factory_identity, run_dir_for
from relayrl.experiment.run import Run
from relayrl.experiment.run_dir import saved_config


def checked_factories(env_factory: Any, network_factory: Any) -> Factories:
    """The factories given to ``train`` or ``load_run``: an ``EnvFactory`` or a function that
    makes one PettingZoo ParallelEnv, and a callable network factory; anything else is refused."""
    if env_factory is not None and not isinstance(env_factory, EnvFactory):
        if not callable(env_factory):
            raise ConfigError(f"env_factory must be a relayrl.envs.EnvFactory or a function that makes a PettingZoo ParallelEnv, got {env_factory!r}")
        env_factory = EnvFactory(env_factory)
    if network_factory is not None and not callable(network_factory):
        raise ConfigError(f"network_factory must be a function or class called as network_factory(P, obs_shape, A) -> torch.nn.Module, got {network_factory!r}")
    return Factories(env_factory, network_factory)


def train(
    config: RunConfig | dict[str, Any],
    out: str | Path | None = "runs",
    *,
    env_factory=None,
    network_factory: NetworkFactory | None = None,
    verbose: bool = True,
) -> Run:
    """Trains (or resumes, if the run directory has checkpoints) and returns the Run.
    ``out=None`` trains in memory without writing a run directory. ``env_factory``: an
    ``EnvFactory``, or a function that makes one PettingZoo ParallelEnv; the factories'
    names join the run directory's hash, so other factories train another run. A dict that
    names a preset must give every key (a partial one would train the defaults under its name)."""
    config = build_config(config)
    factories = checked_factories(env_factory, network_factory)
    run_dir = run_dir_for(config, Path(out), factory_identity(factories.env, factories.network)) if out is not None else None
    done = list_checkpoints(run_dir / "checkpoints") if run_dir is not None else []
    if verbose and done and checkpoint_steps(done[-1]) >= config.total_steps:  # as the command line says it
        print(f"{run_dir} is already complete: its checkpoint is at {checkpoint_steps(done[-1]):,} env steps, "
              f"total_steps={config.total_steps:,}; nothing more is trained (the run is returned as it is)")
    run = build_run(config, run_dir, factories, verbose)
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
    return train(data, out, verbose=verbose)


def _networks_elsewhere(policy: Any) -> bool:
    """Whether a policy's networks do not come from the run's checkpoint: random and
    scripted ones have none, a frozen one loaded its own at build (``config`` may put
    another opponent in the run's place)."""
    return isinstance(policy, (RandomPolicy, ScriptedPolicy)) or (isinstance(policy, FrozenPolicy) and bool(policy.source))


def load_run(
    run_dir: str | Path,
    checkpoint: str | Path | None = None,
    *,
    config: RunConfig | None = None,
    env_factory: EnvFactory | None = None,
    network_factory: NetworkFactory | None = None,
) -> Run:
    """A trained run's policies with the networks of its last checkpoint (or of
    ``checkpoint``), to evaluate (``run.evaluator.greedy(episodes)``) or to act with in a
    loop of one's own (``run.policies[pid].act(obs [W, N, ...], carry, None)``: greedy).
    Only the networks are loaded, not the replay or the optimisers (``train`` resumes a run);
    ``build_run`` alone gives fresh networks. A ``config`` that changes the run's may give
    a policy networks of its own (``policies.red: {kind: frozen, checkpoint: OTHER}``, or
    ``kind: random``): those keep theirs. The loaded run neither locks nor writes its
    directory, so a run that another process trains now can be loaded from its last
    complete checkpoint. ``config``: the run's, read from its ``config.yaml`` where not
    given; a run of Python factories needs them again."""
    run_dir = Path(run_dir)
    if config is None:
        config = validate_config(saved_config(run_dir))
    checkpoints = list_checkpoints(run_dir / "checkpoints")
    chosen = Path(checkpoint) if checkpoint is not None else (checkpoints[-1] if checkpoints else None)
    if chosen is None:
        raise RelayRLError(f"{run_dir} has no checkpoint to load: train it first (relayrl resume {run_dir})")
    run = build_run(config, None, checked_factories(env_factory, network_factory), verbose=False, runs_root=run_dir.parent.parent)
    saved = load_policies(chosen)
    for pid, policy in run.policies.items():
        if _networks_elsewhere(policy):
            continue
        if pid not in saved:
            run.close()
            raise CheckpointError(
                f"{chosen} holds policies {sorted(saved)}, not this run's {pid!r}: another relayrl revision wrote it "
                f"(the commit is in {run_dir / 'provenance.yaml'}); load it with that revision"
            )
        policy.load_policy_state(saved[pid], str(chosen))
    return run
