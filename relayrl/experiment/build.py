"""Composes a ``Run`` from a config (DESIGN.md §3): its venues, policies, learners and the
exchanges between them, collector, rounds, reporter, evaluator and clock. The only place
that reads ``backend.kind``: local or Ray is decided here, once.

Everything the config can get wrong for this env is checked before anything trains: the
env builds from its settings (each round's too), every policy keeps one kind of slot from
round to round, the checks that need the groups (``relayrl.experiment.group_checks``: the
replays fit in memory, learners that share see and act alike), Ray has the CPUs the run's
actors reserve.
"""

import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from relayrl.algos.algorithm import algorithms_with
from relayrl.algos.dqn import NetworkFactory
from relayrl.algos.off_policy import learner_plan
from relayrl.arena.collect import Collector, LocalCollector, Venue
from relayrl.arena.learning import LearnerPool
from relayrl.arena.match import compile_matches
from relayrl.arena.policy import LearningPolicy, Policy, PolicyBuild
from relayrl.arena.policy_config import POLICY_KINDS, PolicyConfig
from relayrl.arena.round import RoundSchedule
from relayrl.arena.schemes import SCHEMES
from relayrl.core.device import bfloat16_native, configure_threads, resolve_device
from relayrl.core.memory import keep_freed_memory
from relayrl.core.errors import CheckpointError, ConfigError, RelayRLError, RelayRLWarning
from relayrl.core.profiler import SectionTimer
from relayrl.core.registry import Plugins
from relayrl.core.seeding import derive_seeds
from relayrl.core.specs import GroupSpec
from relayrl.envs.registry import EnvFactory, make_env_factory
from relayrl.envs.vector_env import VectorEnv, make_vector_env
from relayrl.experiment.checkpoint import MANIFEST, list_checkpoints, load_learner, load_policies
from relayrl.experiment.clock import Clock
from relayrl.experiment.config import RunConfig, build_config
from relayrl.experiment.evaluation import Evaluator
from relayrl.experiment.group_checks import check_action_settings, check_alike_sides, check_memory, check_minibatches, check_team_episodes, note_group_critics
from relayrl.experiment.report import ReportLayout, Reporter
from relayrl.experiment.run import Run
from relayrl.experiment.run_dir import RunDirectory, pretrained_run
from relayrl.replay.shared import SharedReplay
from relayrl.sharing.exchange import Exchange, RelayBetween, SharedReplayBetween


@dataclass(frozen=True)
class Factories:
    """What a user's code builds instead of the config: the env (``env``: seed -> a
    PettingZoo Parallel env) and the DQN's Q-network (``network``)."""

    env: EnvFactory | None = None
    network: NetworkFactory | None = None


class Venues:
    """Each round's venue (the run's without rounds): its env copies are built where the
    round's settings differ from those of the venue before it. Called with a round index."""

    def __init__(self, config: RunConfig, factory: EnvFactory | None) -> None:
        self.config, self.factory = config, factory
        self.current: Venue | None = None
        self.env_round = 0  # the round whose env settings the current copies were built with

    def build(self, index: int) -> tuple[EnvFactory, VectorEnv]:
        """Round ``index``'s env factory and copies, or a clear error where the env refuses its settings."""
        section = self._section(index)
        reads_state = self.config.reads_state()
        factory = replace(self.factory, with_state=reads_state) if self.factory else make_env_factory(section.name, section.env_settings(), reads_state)
        named = {name: tuple(agents) for name, agents in getattr(section, "groups", {}).items()}
        if named:
            if factory.vectorised is not None:
                raise ConfigError(f"env.groups regroups the agents of an env relayrl wraps agent by agent; {section.name} is batched and keeps its own groups")
            factory = replace(factory, groups=named)
        try:
            return factory, make_vector_env(factory, section.num_envs, section.vector)
        except RelayRLError:  # relayrl's own refusals say what is wrong
            raise
        except (TypeError, ValueError) as error:  # settings the environment itself refuses
            where = f"rounds[{index}].env" if self.config.rounds and self.config.rounds[index].env else "env.settings"
            raise ConfigError(f"{section.name} could not be built from {where}: {type(error).__name__}: {error}") from None

    def _section(self, index: int) -> Any:
        return self.config.round_env(index) if self.config.rounds else self.config.env

    def __call__(self, index: int) -> Venue:
        rounds = self.config.rounds
        if self.current is None or (rounds and rounds[index].env != rounds[self.env_round].env):
            self.close()
            factory, venv = self.build(index)
            self.current, self.env_round = Venue(self._section(index), factory, venv, []), index
        groups = [g.name for g in self.current.venv.groups]
        self.current = Venue(self.current.env, self.current.factory, self.current.venv, self.config.matches(groups, index))
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.venv.close()
            self.current = None


def round_specs(config: RunConfig, venues: Venues, first: Venue) -> dict[str, GroupSpec]:
    """Every policy's slot spec over all rounds, each round's env built once to check that a
    policy keeps one kind of slot from round to round (before anything trains)."""
    names = [g.name for g in first.venv.groups]
    check_alike_sides(config, first.venv.groups)
    specs: dict[str, GroupSpec] = {}
    for index in range(max(1, len(config.rounds))):
        venv = first.venv if index == 0 or not config.rounds[index].env else venues.build(index)[1]
        try:
            compiled = compile_matches(config.matches(names, index), venv.groups, venv.num_envs)
        finally:
            if venv is not first.venv:
                venv.close()
        for pid, assignment in compiled.items():
            known, spec = specs.setdefault(pid, assignment.spec), assignment.spec
            if (known.obs_shape, known.n_agents, known.n_actions, known.action_shape) != (spec.obs_shape, spec.n_agents, spec.n_actions, spec.action_shape):
                raise ConfigError(
                    f"rounds[{index}] gives policy {pid!r} {spec.n_agents} agents with {spec.obs_shape} observations, where an "
                    f"earlier round gave {known.n_agents} with {known.obs_shape}: a policy's networks keep their shapes, so change "
                    "the round's env or matches"
                )
    return specs


class SavedPolicies:
    """Frozen policies' networks, and those a learning policy starts from, from their
    checkpoint or pretrained run (read as data); ``sources`` records where each came from."""

    def __init__(self, runs_root: Path | None) -> None:
        self.runs_root = runs_root
        self.sources: dict[str, str] = {}
        self.found: dict[str, tuple[Path, str]] = {}  # each policy's checkpoint, looked up once

    def __call__(self, pid: str, policy: PolicyConfig) -> tuple[dict[str, Any], str]:
        checkpoint, key = self._checkpoint(pid, policy)
        saved = load_policies(checkpoint)
        if key not in saved:
            raise CheckpointError(f"{checkpoint} holds policies {sorted(saved)}, not {key!r} (set policies.{pid}.pretrained_policy)")
        self.sources[pid] = str(checkpoint)
        return saved[key], str(checkpoint)

    def learner_state(self, pid: str, policy: PolicyConfig) -> dict[str, Any] | None:
        """The algorithm state of the learner behind ``__call__``'s networks (its replay
        left unread), or None where that policy did not learn in its run."""
        checkpoint, key = self._checkpoint(pid, policy)
        return load_learner(checkpoint, key)

    def _checkpoint(self, pid: str, policy: PolicyConfig) -> tuple[Path, str]:
        """The checkpoint a policy's ``checkpoint`` or ``pretrained`` names, and its id there,
        looked up once: a warm start reads its networks and its learner from the same
        checkpoint, even where its source run writes a newer one in between."""
        if pid not in self.found:
            self.found[pid] = self._lookup(pid, policy)
        return self.found[pid]

    def _lookup(self, pid: str, policy: PolicyConfig) -> tuple[Path, str]:
        source = Path(policy.checkpoint) if policy.checkpoint else pretrained_run(policy.pretrained or "", policy.pretrained_seed, self.runs_root)
        checkpoint = source
        if not (source / MANIFEST).is_file():
            found = list_checkpoints(source / "checkpoints") or list_checkpoints(source)
            if not found:
                hint = f"; train it first: relayrl train {policy.pretrained} --seed {policy.pretrained_seed}" if policy.pretrained else ""
                what = "is frozen" if policy.kind == "frozen" else "starts from a trained policy"
                raise CheckpointError(f"policy {pid!r} {what} but {source} has no checkpoint{hint}")
            checkpoint = found[-1]
        return checkpoint, policy.pretrained_policy or pid


def exchanges(config: RunConfig, specs: dict[str, GroupSpec]) -> list[Exchange]:
    """The relay between learners and the shared replay the config asks for; their learners'
    slots must see and act alike."""

    def same_slots(key: str, between: list[str], verb: str) -> None:
        shapes = {pid: (specs[pid].obs_shape, specs[pid].n_actions, specs[pid].action_shape) for pid in between}
        if len(set(shapes.values())) > 1:
            have = ", ".join(f"{pid} has {o} observations and {a} actions" for pid, (o, a, _) in shapes.items())
            raise ConfigError(f"{key}: {have}; learners {verb} only among policies whose slots have the same observations and actions")

    found: list[Exchange] = []
    if config.relay is not None:
        same_slots("relay.between", config.relay.between, "relay transitions")
        found.append(RelayBetween(config.relay.between))
    if config.shared_replay is not None:
        between = config.shared_replay.between
        same_slots("shared_replay.between", between, "share a replay")
        algo, section, sharing = config.recipe(between[0])
        replay = SharedReplay(learner_plan(specs[between[0]], algo, section, sharing), derive_seeds(config.seed, 1, "shared_replay")[0])
        firsts = [sum(specs[pid].n_agents for pid in between[:k]) for k in range(len(between))]
        found.append(SharedReplayBetween(between, firsts, replay))
    return found


def build_run(
    config: RunConfig | dict[str, Any], run_dir: str | Path | None = None, factories: Factories = Factories(), verbose: bool = True, runs_root: str | Path | None = None
) -> Run:
    """The run of ``config``, checkpointed in ``run_dir`` (None: in memory only). Its
    networks are fresh until ``run.train()`` resumes the run's last checkpoint; to evaluate
    or act with a trained run, ``relayrl.experiment.load_run``. ``runs_root``: where frozen
    policies' ``pretrained`` runs are looked up (default: ``run_dir``'s root)."""
    config = build_config(config)
    run_dir = None if run_dir is None else Path(run_dir)
    runs_root = None if runs_root is None else Path(runs_root)
    made = tuple(name for name, given in (("env_factory", factories.env), ("network_factory", factories.network)) if given is not None)
    directory = RunDirectory(run_dir, config, made) if run_dir is not None else None
    if factories.env is not None and any(r.env for r in config.rounds):
        raise ConfigError("rounds change env.settings, which a given env_factory cannot apply: build the env by name, or drop the rounds' env")
    configure_threads(config.torch_threads)
    cores = os.cpu_count() or 1
    if config.torch_threads > cores:  # threads beyond the cores wait on each other at every operation
        warnings.warn(f"torch_threads={config.torch_threads} is more than this machine's {cores} cores, and the learners' operations will "
                      f"crawl: set torch_threads={cores} or fewer (1, the default, suits small networks)", RelayRLWarning, stacklevel=2)
    if config.keep_freed_memory:
        keep_freed_memory()
    device = resolve_device(config.device)
    if config.precision == "bfloat16" and bfloat16_native(device) is False:
        warnings.warn(
            f"precision=bfloat16 on {device}, which has no bfloat16 instructions (a CPU needs AVX512-BF16 or AMX, a GPU compute "
            "capability 8.0): its products are emulated and run slower than float32 there; set precision=float32",
            RelayRLWarning,
            stacklevel=2,
        )
    timer = SectionTimer()  # enabled by relayrl bench's loop profile
    venues = Venues(config, factories.env)
    first = venues(0)
    names = [g.name for g in first.venv.groups]
    if config.report_group is not None and config.report_group not in names:
        raise ConfigError(f"this environment's groups are {names}; report_group names {config.report_group!r}")
    configs = config.policy_configs(names)
    if factories.network is not None:  # a user's network that no learner would build would be dropped without a word
        able = algorithms_with(lambda capabilities: capabilities.network_factory)
        own = sorted({config.recipe(pid)[0] for pid, policy in configs.items() if policy.kind not in ("random", "scripted")} - set(able))
        if own:
            builds = "builds its own (its config section sets the sizes)" if len(own) == 1 else "build their own (their config sections set the sizes)"
            raise ConfigError(f"network_factory builds the networks of {', '.join(able)}; {' and '.join(own)} {builds}: "
                              f"drop network_factory, or train {' or '.join(able)}")
    strays = sorted(set(config.policies) - set(configs))
    if strays:  # a user env's groups are known only now (presets are checked by the config)
        raise ConfigError(f"policies {strays} drive no entity: without a match each policy drives the group of its name "
                          f"(groups of {config.env.name}: {names}); place the others with match")
    specs = round_specs(config, venues, first)
    for group in first.venv.groups:
        if group.flattened and verbose:
            print(f"note: {group.name}'s observations {group.flattened} are flattened to {group.obs_shape} (the networks take images HxWxC or flat vectors)")
        if len(group.obs_shape) == 3 and group.obs_shape[0] <= 4 < group.obs_shape[2] and verbose:  # few rows, many channels: likely CxHxW
            height, width, channels = group.obs_shape
            print(f"note: {group.name}'s observations {group.obs_shape} are read as images of {height}x{width} with {channels} channels "
                  "(height x width x channels): if the env puts channels first, transpose its observations")
    if verbose and len(names) > 1:
        note_group_critics(config, specs, configs, names)
    check_action_settings(config, specs, configs)
    check_memory(config, specs, configs, verbose)
    check_minibatches(config, first, configs)
    check_team_episodes(config, first, configs)
    saved = SavedPolicies(runs_root if runs_root is not None else run_dir.parent.parent if run_dir is not None else None)
    resuming = directory is not None and directory.latest() is not None
    # what the DQN builds its networks from (each policy's model: config.model_of); where an annealed learning rate reaches 0
    options = {"model": config.model, "network_factory": factories.network, "total_steps": config.total_steps}
    policies: dict[str, Policy] = {}
    builds: dict[str, PolicyBuild] = {}  # what a learner actor builds its learner from
    for index, (pid, spec) in enumerate(specs.items()):
        # the first policy keeps the single-group stream, so one-group runs reproduce exactly
        seeds = derive_seeds(config.seed, 4, "trainer" if index == 0 else f"trainer/{pid}")
        build = PolicyBuild(spec, configs[pid], config.recipe(pid), device, seeds, timer, {**options, "model": config.model_of(pid)})
        # a learning policy starts from another's networks only in a new run: a resume loads its own
        trained = None if resuming else (lambda pid=pid: saved.learner_state(pid, configs[pid]))
        policies[pid] = POLICY_KINDS[configs[pid].kind](replace(build, saved=lambda pid=pid: saved(pid, configs[pid]), trained=trained))
        builds[pid] = build
    learners = {pid: policy.learner for pid, policy in policies.items() if isinstance(policy, LearningPolicy)}
    if verbose:
        print("first updates: " + "; ".join(f"{pid} {learner.first_update()}" for pid, learner in learners.items()))
    held_out = {}
    if config.eval.policies:
        compiled = compile_matches(config.eval.match or first.matches, first.venv.groups, first.venv.num_envs)
        for pid, policy in config.eval.policies.items():
            if pid not in compiled:
                raise ConfigError(f"eval.policies.{pid} drives no entity: give it slots in eval.match")
            seeds = derive_seeds(config.seed, 4, f"eval/{pid}")
            build = PolicyBuild(compiled[pid].spec, policy, config.recipe(pid), device, seeds, timer, {**options, "model": config.model_of(pid)},
                                lambda pid=pid, policy=policy: saved(pid, policy))
            held_out[pid] = POLICY_KINDS[policy.kind](build)
    n_steps = config.backend.fragment_steps or min(learner.fragment_steps(first.venv.num_envs) for learner in learners.values())
    _check_budget(config, n_steps, first.venv.num_envs)
    collector, pool = _backend(config, factories, policies, learners, exchanges(config, specs), builds, timer)
    reported = _reported_group(config, first, learners)
    main = names[reported] if names[reported] in learners else next(iter(learners))
    layout = ReportLayout(
        names, reported, list(learners), main, learners[main].metric_columns, pool.exchange_columns(),
        len(names) == 1 and len(policies) == 1, bool(config.rounds),
    )
    reporter = Reporter(layout, f"[{config.preset} s{config.seed}]", config.total_steps, len(config.rounds), verbose)
    unset = [name for name in SCHEMES if name not in RunConfig.model_fields]
    if unset:
        raise ConfigError(f"scheme(s) {unset} are registered in SCHEMES without a section of their name in the run's config: a scheme is "
                          "configured by a RunConfig field of its name (as pbt:, tournament:, selfplay:), which relayrl.experiment.config declares")
    schemes = [SCHEMES[name](getattr(config, name), derive_seeds(config.seed, 1, name)[0]) for name in SCHEMES if getattr(config, name) is not None]
    rounds = RoundSchedule(config.rounds, config.hooks, schemes, directory.write_table if directory else None, verbose)
    evaluator = Evaluator(policies, held_out, config.eval.match, config.seed + config.eval.seed_offset, config.eval.max_episode_steps)
    intervals = {"report": config.report_interval, "eval": config.eval.interval, "checkpoint": config.checkpoint_interval}
    clock = Clock(Clock.start(intervals), intervals, rounds.ends)
    return Run(config, directory, policies, pool, collector, venues, rounds, reporter, evaluator, clock, n_steps, timer, saved.sources, verbose)


def _backend(
    config: RunConfig, factories: Factories, policies: dict[str, Policy], learners: dict[str, Any], found: list[Exchange],
    builds: dict[str, PolicyBuild], timer: SectionTimer,
) -> tuple[Collector, LearnerPool]:
    """Where the env copies step and the learners learn: here, or Ray env runners and (with
    ``backend.learners=actors``) learner actors, with the CPUs they reserve."""
    b = config.backend
    if b.kind == "local":
        return LocalCollector(policies, timer), LearnerPool(learners, found, config.precision)
    if factories.env is not None:
        raise ConfigError("backend ray builds each runner's env copies by env.name: give the env by name, not as an env_factory")
    from relayrl.arena.ray.collect import RayCollector
    from relayrl.arena.ray.learning import RayLearnerPool
    from relayrl.arena.ray.runners import start_ray

    Plugins.here()  # a script's own registrations, which the actors cannot import, are refused before Ray starts
    actors = len(learners) if b.learners == "actors" else 0
    need = b.runners * b.runner_cpus + actors * b.learner_cpus
    ray, _ = start_ray(b.address, max(os.cpu_count() or 1, math.ceil(need)))
    total = ray.cluster_resources().get("CPU", 0.0)
    if need > total:
        raise ConfigError(
            f"backend.runners={b.runners} x runner_cpus={b.runner_cpus:g} and {actors} learner actors x learner_cpus={b.learner_cpus:g} "
            f"need {need:g} CPUs but the Ray cluster has {total:g}: lower them, or join a larger cluster (backend.address)"
        )
    collector = RayCollector(policies, b.runners, b.address, b.runner_cpus, config.seed)
    if actors:
        return collector, RayLearnerPool(learners, found, builds, ray, b.learner_cpus, config.torch_threads, config.keep_freed_memory, config.precision)
    return collector, LearnerPool(learners, found, config.precision)


def _check_budget(config: RunConfig, n_steps: int, num_envs: int) -> None:
    """A run trains whole fragments: a budget below one would train a whole fragment anyway
    (and an on-policy learner's fragment is its rollout, which it must fill to learn)."""
    fragment = n_steps * num_envs
    if config.total_steps < fragment:
        raise ConfigError(
            f"total_steps={config.total_steps:,} is less than one fragment of this run ({n_steps:,} steps of each of "
            f"{num_envs} env copies = {fragment:,} env steps), and a run trains whole fragments: set total_steps to at "
            f"least {fragment:,}, or shorten the fragment (on_policy.rollout_length, the learner's fragment_length, or "
            "backend.fragment_steps) or use fewer env copies (env.num_envs)"
        )
    _check_rounds(config, fragment)


def _check_rounds(config: RunConfig, fragment: int) -> None:
    """A round ends with the first whole fragment that reaches its end, one round per
    fragment: a round shorter than a fragment would push the later ones past the budget
    (the last ones never ran), so it is refused; lengths that whole fragments would change by
    more than a tenth are said with the lengths the rounds will have."""
    short = [(i, r.steps) for i, r in enumerate(config.rounds) if r.steps < fragment]
    if short:
        i, steps = short[0]
        raise ConfigError(f"rounds[{i}].steps={steps:,} is shorter than one fragment of this run ({fragment:,} env steps), and a round ends "
                          f"with a whole fragment: give every round at least {fragment:,} steps (a multiple of {fragment:,} keeps them as "
                          "given), or shorten the fragment (on_policy.rollout_length, the learner's fragment_length, or backend.fragment_steps)")
    ends, done, wanted = [], 0, 0
    for r in config.rounds:
        wanted += r.steps
        done = max(done + fragment, -(-wanted // fragment) * fragment)
        ends.append(done)
    lengths = [b - a for a, b in zip([0, *ends], ends)]
    if any(abs(length - r.steps) > 0.1 * r.steps for length, r in zip(lengths, config.rounds)):  # a few steps more or less: not said
        warnings.warn(f"the rounds' steps {[r.steps for r in config.rounds]} are not whole fragments of this run ({fragment:,} env steps), "
                      f"and a round ends with the first fragment that reaches its end: they will run {lengths} env steps; give them "
                      f"multiples of {fragment:,} to keep them as given", RelayRLWarning, stacklevel=3)


def _reported_group(config: RunConfig, first: Venue, learners: dict[str, Any]) -> int:
    """The group whose reward is the run's figure: ``report_group``, else the first group a
    learning policy drives in the first match (a user env's groups are known only once it
    is built)."""
    names = [g.name for g in first.venv.groups]
    if config.report_group is not None:
        return names.index(config.report_group)
    compiled = compile_matches(first.matches[:1], first.venv.groups, 1)
    driven = {s.group for pid in learners if pid in compiled for s in compiled[pid].segments}
    return min(driven, default=0)
