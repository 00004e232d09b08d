"""The run loop, one iteration at a time, for the policies a match list places on an env's
entities (``relayrl.arena.match``).

Per iteration: collect a rollout fragment from every env copy, each entity acting through
its policy; every learning policy's learner observes its fragment (replay, relay) and then
takes the gradient steps it has earned (``relayrl.algos.off_policy``). Frozen, random and
scripted policies only act. Training intensity is fixed whatever the number of env copies: one
update per agent per ``fragment_length`` env steps, counted over all copies. With
``backend: ray`` the copies step in Ray env runners (``relayrl.arena.runners``), and the
learners stay here or learn in Ray actors (``relayrl.arena.learners``); rounds, matches,
schemes, evaluations and checkpoints stay here.
"""

import csv
import io
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

import relayrl
from relayrl.algos.algorithm import Learner
from relayrl.algos.dqn import NetworkFactory
from relayrl.algos.off_policy import learner_plan
from relayrl.arena.match import compile_matches
from relayrl.arena.policy import POLICY_KINDS, LearningPolicy, Policy, PolicyBuild, PolicyConfig
from relayrl.arena.round import RoundContext, RoundResults, end_episodes, load_hook, round_ends
from relayrl.arena.rollout import Rollout, finite_check
from relayrl.arena.learners import RayLearners
from relayrl.arena.runners import RayRunners, start_ray
from relayrl.arena.schemes.pbt import PopulationBasedTraining
from relayrl.arena.schemes.selfplay import SelfPlay
from relayrl.arena.schemes.tournament import Tournament
from relayrl.core.device import configure_threads, resolve_device
from relayrl.core.errors import CheckpointError, ConfigError, NonFiniteError
from relayrl.core.profiler import SectionTimer
from relayrl.core.resources import available_memory, human_bytes
from relayrl.core.seeding import derive_seeds
from relayrl.core.specs import GroupSpec
from relayrl.envs.types import GroupObs
from relayrl.envs.registry import EnvFactory, make_env_factory
from relayrl.envs.vector_env import VectorEnv, make_vector_env
from relayrl.experiment.checkpoint import (
    CONFIG_FILE,
    MANIFEST,
    checkpoint_steps,
    list_checkpoints,
    load_checkpoint,
    load_policies,
    save_checkpoint,
    write_atomically,
)
from relayrl.experiment.config import RunConfig, check_resumable
from relayrl.experiment.evaluation import evaluate
from relayrl.experiment.metrics import MetricsWriter
from relayrl.experiment.run_lock import RunLock
from relayrl.replay import ReplayPlan, row_nbytes
from relayrl.replay.shared import SharedReplay


# built-in schemes, by their config section: each has on_round_start / on_round_end, a table
# of rows (written to <run dir>/<name>.csv after every round) and a state in checkpoints
SCHEMES = {"pbt": PopulationBasedTraining, "tournament": Tournament, "selfplay": SelfPlay}


def _table(rows: list[dict[str, Any]], title: str) -> str:
    """Rows of one set of keys as a plain-text table for the progress display."""
    if not rows:
        return f"{title}: no rows"
    keys = list(rows[0])
    cells = [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()] for row in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = [title, "  ".join(k.rjust(w) for k, w in zip(keys, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _nothing_saved() -> tuple[dict[str, Any], str]:
    raise AssertionError("a learning policy loads no saved policy file")


def _csv(rows: list[dict[str, Any]]) -> str:
    """Rows of one set of keys as CSV text."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else [])
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


@dataclass
class Counters:
    env_steps: int = 0
    agent_steps: int = 0
    iterations: int = 0
    next_report: int = 0
    next_eval: int = 0
    next_checkpoint: int = 0
    wall_s: float = 0.0
    metric_rows: int | None = None  # rows in metrics.csv (None in checkpoints that predate the count)
    round: int = 0  # the round the run is in (relayrl.arena.round)


@dataclass
class Window:
    """Accumulators between two metric reports."""

    env_steps: int = 0
    episode_returns: list[np.ndarray] = field(default_factory=list)  # each [n_groups]: summed over a group
    episode_lengths: list[int] = field(default_factory=list)
    seconds: float = 0.0
    relayed_out: dict[str, int] = field(default_factory=dict)  # relay.between: transitions each learner sent


def run_dir_for(config: RunConfig, root: Path) -> Path:
    """``<root>/<preset>-<config hash>/<seed>/`` (DESIGN.md §5)."""
    return root / f"{config.preset}-{config.config_hash()}" / str(config.seed)


def _git_revision() -> str:
    """The commit relayrl runs from, marked ``+changes`` where the package's tracked files
    differ from it (a run from an uncommitted change is then not taken for the commit's)."""
    package = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=package, capture_output=True, text=True, timeout=5)
        if head.returncode != 0 or not head.stdout.strip():
            return "unknown"
        status = ["git", "status", "--porcelain", "--untracked-files=no", "--", "."]
        changed = subprocess.run(status, cwd=package, capture_output=True, text=True, timeout=5).stdout.strip()
        return head.stdout.strip() + ("+changes" if changed else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance() -> dict[str, Any]:
    import pettingzoo

    return {
        "relayrl": relayrl.__version__,
        "git_revision": _git_revision(),
        "python": sys.version.split()[0],
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "pettingzoo": pettingzoo.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


class Trainer:
    """Trains the policies of a config; a run directory makes it checkpointed and resumable."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path | None = None,
        *,
        env_factory: EnvFactory | None = None,
        network_factory: NetworkFactory | None = None,
        verbose: bool = True,
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.verbose = verbose
        self.changes: dict[str, tuple[Any, Any]] = {}  # settings a resume changed (recorded in provenance)
        if run_dir is not None:
            self._check_run_dir()
        configure_threads(config.torch_threads)
        self.device = resolve_device(config.device)
        if env_factory is not None and any(r.env for r in config.rounds):
            raise ConfigError("rounds change env.settings, which a given env_factory cannot apply: build the env by name, or drop the rounds' env")
        self.user_factory = env_factory
        self.factory, self.venv = self._build_env(0)
        self.env_round = 0  # the round whose env settings the venv was built with
        self.round_seed = config.seed  # what the current round's env copies reset with
        self.timer = SectionTimer()  # enabled by relayrl bench's loop profile
        names = [g.name for g in self.venv.groups]
        if config.report_group is not None and config.report_group not in names:
            raise ConfigError(f"this environment's groups are {names}; report_group names {config.report_group!r}")
        self.matches = config.matches(names, 0)
        configs = config.policy_configs(names)
        strays = sorted(set(config.policies) - set(configs))
        if strays:  # a user env's groups are known only now (presets are checked by the config)
            raise ConfigError(
                f"policies {strays} drive no entity: without a match each policy drives the group of its name "
                f"(groups of {config.env.name}: {names}); place the others with match"
            )
        self.policy_specs = self._round_specs(names)
        self._check_memory(configs)
        self.policies: dict[str, Policy] = {}
        self.learners: dict[str, Learner] = {}
        self.learner_builds: dict[str, PolicyBuild] = {}
        self.frozen_sources: dict[str, str] = {}  # policy id -> checkpoint its networks came from
        options = {"model": config.model, "network_factory": network_factory}  # what the DQN builds its networks from
        for index, (pid, spec) in enumerate(self.policy_specs.items()):
            # the first policy keeps the single-group stream, so one-group runs reproduce exactly
            seeds = derive_seeds(config.seed, 4, "trainer" if index == 0 else f"trainer/{pid}")
            build = PolicyBuild(
                spec, configs[pid], config.recipe(pid), self.device, seeds, self.timer, options,
                lambda pid=pid: self._saved_policy(pid, configs[pid]),
            )
            policy = self.policies[pid] = POLICY_KINDS[configs[pid].kind](build)
            if isinstance(policy, LearningPolicy):
                self.learners[pid] = policy.learner
                self.learner_builds[pid] = replace(build, saved=_nothing_saved)  # what a learner actor builds it from
        if config.relay is not None:
            self._connect_relay(config.relay.between)
        self.shared_replay: SharedReplay | None = None  # shared_replay.between: the one replay, at home in the driver
        if config.shared_replay is not None:
            self.shared_replay = self._connect_shared_replay(config.shared_replay.between)
        self.eval_policies = self._held_out_policies(options)
        self.fragment_length = min(learner.settings.fragment_length for learner in self.learners.values())
        self.reported = self._reported_index(names)
        self.counters = Counters(
            next_report=config.report_interval,
            next_eval=config.eval.interval if config.eval.interval else math.inf,
            next_checkpoint=config.checkpoint_interval,
        )
        self.window = Window()
        self.recent_returns: deque[float] = deque(maxlen=100)  # RLlib's episode_reward_mean window
        self.rollout = Rollout(self.venv, self.policies, self.matches, self.timer, finite_check(self.venv.groups))
        self.round_ends = round_ends(config.rounds)
        self.round_returns: list[np.ndarray] = []  # the current round's episodes, [n_groups] each
        self.round_copies: list[int] = []  # and the env copy each ran in
        self.hooks = {when: [load_hook(path) for path in getattr(config.hooks, when)] for when in ("on_round_start", "on_round_end")}
        self.schemes = [
            scheme(getattr(config, name), derive_seeds(config.seed, 1, name)[0]) for name, scheme in SCHEMES.items() if getattr(config, name) is not None
        ]
        self.metrics: MetricsWriter | None = None
        self.history: list[dict[str, float]] = []
        self.lock = RunLock(run_dir) if run_dir is not None else None
        self.eval_venv: VectorEnv | None = None
        # backend ray: the env runners (started with the run, after a resume loaded the
        # policies they copy) and the runner states a checkpoint held
        self.runners: RayRunners | None = None
        self.learner_actors: RayLearners | None = None  # backend.learners=actors, while the learners are away
        self.saved_runners: list[dict[str, Any]] | None = None
        if config.backend.kind == "ray" and env_factory is not None:
            raise ConfigError("backend ray builds each runner's env copies by env.name: give the env by name, not as an env_factory")

    # ------------------------------------------------------------------ rounds
    def _build_env(self, index: int) -> tuple[EnvFactory, VectorEnv]:
        """The env factory and vector env of round ``index`` (the run's env without rounds)."""
        section = self.config.round_env(index) if self.config.rounds else self.config.env
        factory = self.user_factory or make_env_factory(section.name, section.env_settings())
        try:
            return factory, make_vector_env(factory, section.num_envs, section.vector)
        except (TypeError, ValueError) as error:  # settings the environment itself refuses
            where = f"rounds[{index}].env" if self.config.rounds and self.config.rounds[index].env else "env.settings"
            raise ConfigError(f"{section.name} could not be built from {where}: {type(error).__name__}: {error}") from None

    def _round_specs(self, names: list[str]) -> dict[str, GroupSpec]:
        """Every policy's spec over all rounds, each round's env built once to check that a
        policy keeps one kind of space from round to round (before anything trains)."""
        specs: dict[str, GroupSpec] = {}
        for index in range(max(1, len(self.config.rounds))):
            venv = self.venv if index == 0 or not self.config.rounds[index].env else self._build_env(index)[1]
            try:
                compiled = compile_matches(self.config.matches(names, index), venv.groups, venv.num_envs)
            finally:
                if venv is not self.venv:
                    venv.close()
            for pid, assignment in compiled.items():
                known = specs.setdefault(pid, assignment.spec)
                if (known.obs_shape, known.n_agents, known.n_actions, known.action_shape) != (
                    assignment.spec.obs_shape, assignment.spec.n_agents, assignment.spec.n_actions, assignment.spec.action_shape
                ):
                    raise ConfigError(
                        f"rounds[{index}] gives policy {pid!r} {assignment.spec.n_agents} agents with {assignment.spec.obs_shape} "
                        f"observations, where an earlier round gave {known.n_agents} with {known.obs_shape}: a policy's networks "
                        "keep their shapes, so change the round's env or matches"
                    )
        return specs

    def _enter_round(self, index: int) -> None:
        """Builds round ``index``'s env (where its settings differ) and matches, and a fresh
        rollout over them, reset with the round's seed."""
        if self.config.rounds[index].env != self.config.rounds[self.env_round].env:
            self.venv.close()
            self.close_eval_envs()
            self.factory, self.venv = self._build_env(index)
            self.env_round = index
        self.counters.round = index
        self.matches = self.config.matches([g.name for g in self.venv.groups], index)
        self.rollout = Rollout(self.venv, self.policies, self.matches, self.timer, finite_check(self.venv.groups))
        self.round_seed = derive_seeds(self.config.seed, 1, f"round/{index}")[0]
        self.rollout.reset(self.round_seed)
        if self.runners is not None:  # new ones start with the round, once its schemes and hooks have run
            self._stop_runners()

    def _connect_relay(self, between: list[str]) -> None:
        """Every learner of ``relay.between`` sends what it selects to the others, which store
        it as their own transitions: their entities must see and act alike."""
        self._same_entities("relay.between", between, "relay transitions")
        for pid in between:
            self.learners[pid].exports = True

    def _connect_shared_replay(self, between: list[str]) -> SharedReplay:
        """The one replay of ``shared_replay.between``: each learner's agents store into it,
        tagged after the agents of the learners before it, and draw from all of it."""
        self._same_entities("shared_replay.between", between, "share a replay")
        first = self.learners[between[0]]
        algo, section, sharing = self.config.recipe(between[0])
        plan = learner_plan(first.spec, algo, section, sharing)
        replay = SharedReplay(plan, derive_seeds(self.config.seed, 1, "shared_replay")[0])
        first_agent = 0
        for pid in between:
            learner = self.learners[pid]
            learner.join_shared_replay(first_agent)
            learner.shared.source = replay
            first_agent += learner.spec.n_agents
        return replay

    def _same_entities(self, key: str, between: list[str], verb: str) -> None:
        """Refuses policies of ``key`` whose slots see or act differently."""
        specs = {pid: self.policy_specs[pid] for pid in between}
        shapes = {pid: (s.obs_shape, s.n_actions, s.action_shape) for pid, s in specs.items()}
        if len(set(shapes.values())) > 1:
            raise ConfigError(
                f"{key}: {', '.join(f'{pid} has {o} observations and {a} actions' for pid, (o, a, _) in shapes.items())}; "
                f"learners {verb} only among policies whose slots have the same observations and actions"
            )

    def _round_context(self, results: RoundResults | None = None) -> RoundContext:
        c = self.counters
        return RoundContext(c.round, self.config.rounds[c.round], self.policies, c.env_steps, results)

    def _end_round(self) -> None:
        """The round's results go to the ``on_round_end`` hooks."""
        c = self.counters
        start = self.round_ends[c.round - 1] if c.round else 0
        returns = np.array(self.round_returns).reshape(-1, len(self.venv.groups))
        results = RoundResults(c.round, start, c.env_steps, returns, np.array(self.round_copies, np.int64), [g.name for g in self.venv.groups], self.matches)
        context = self._round_context(results)
        if self.verbose:
            names = [g.name for g in self.venv.groups]
            means = ", ".join(f"{name} {results.mean_return(name):.2f}" for name in names)
            print(f"round {c.round + 1}/{len(self.config.rounds)} ended at env step {c.env_steps:,}: {len(returns)} episodes, mean return {means}")
        for scheme in self.schemes:
            scheme.on_round_end(context)
            if self.run_dir is not None:
                write_atomically(self.run_dir / f"{scheme.name}.csv", _csv(scheme.rows))
            if self.verbose:
                print(_table([r for r in scheme.rows if r["round"] == c.round], f"{scheme.name}, round {c.round + 1}"))
        for hook in self.hooks["on_round_end"]:
            hook(context)
        self.round_returns, self.round_copies = [], []

    def _announce_round(self) -> None:
        """The progress line of a round's start: its env changes and its matches."""
        if not self.verbose:
            return
        c, r = self.counters, self.config.rounds[self.counters.round]
        changes = ", ".join(f"{k}={v}" for k, v in r.env.items()) or "the run's env"
        matches = "; ".join(", ".join(f"{g}: {ids}" for g, ids in m.items()) for m in self.matches[:4])
        more = f" (+{len(self.matches) - 4} more)" if len(self.matches) > 4 else ""
        print(f"round {c.round + 1}/{len(self.config.rounds)}{f' {r.name}' if r.name else ''} from env step {c.env_steps:,}: {changes}; matches {matches}{more}")

    def _begin_round(self) -> None:
        """The round the run has entered starts: announced, then its schemes and hooks."""
        self._announce_round()
        context = self._round_context()
        for scheme in self.schemes:
            scheme.on_round_start(context)
        for hook in self.hooks["on_round_start"]:
            hook(context)
        if self.config.backend.kind == "ray":  # runners of the round's env and matches, the policies as they are now
            self._start_actors(self.round_seed)

    def _held_out_policies(self, options: dict[str, Any]) -> dict[str, Policy]:
        """The policies only evaluations play (``eval.policies``), on their slots of ``eval.match``."""
        held_out = self.config.eval.policies
        if not held_out:
            return {}
        compiled = compile_matches(self.config.eval.match or self.matches, self.venv.groups, self.venv.num_envs)
        built: dict[str, Policy] = {}
        for pid, policy in held_out.items():
            if pid not in compiled:
                raise ConfigError(f"eval.policies.{pid} drives no entity: give it slots in eval.match")
            build = PolicyBuild(
                compiled[pid].spec, policy, self.config.recipe(pid), self.device, derive_seeds(self.config.seed, 4, f"eval/{pid}"),
                self.timer, options, lambda pid=pid, policy=policy: self._saved_policy(pid, policy),
            )
            built[pid] = POLICY_KINDS[policy.kind](build)
        return built

    def _check_run_dir(self) -> None:
        """Before anything is built: a run directory with checkpoint folders but no complete
        checkpoint is refused (resuming from 0 would overwrite its metrics), and a resume may
        change only the runtime settings of the run's recorded config."""
        assert self.run_dir is not None
        folders = sorted(self._checkpoint_dir().glob("step_*")) if self._checkpoint_dir().is_dir() else []
        complete = list_checkpoints(self._checkpoint_dir())
        if folders and not complete:
            raise CheckpointError(
                f"{self._checkpoint_dir()} has {len(folders)} checkpoint folder(s) ({', '.join(f.name for f in folders[-3:])}) "
                f"but none is complete (each lacks its {MANIFEST}); nothing was resumed or changed. Restore a "
                f"checkpoint there, or move {self.run_dir} away to train from step 0"
            )
        saved = self.run_dir / CONFIG_FILE
        if complete and saved.is_file():
            self.changes = check_resumable(yaml.safe_load(saved.read_text()), self.config, str(self.run_dir))

    def _check_memory(self, configs: dict[str, PolicyConfig]) -> None:
        """Prints what the learning policies' replays will take in memory and in each
        checkpoint, and refuses a run whose replays do not fit in the memory available now
        (before allocating)."""
        plans: dict[str, ReplayPlan] = {}
        shared = self.config.shared_replay.between if self.config.shared_replay is not None else []
        for pid, spec in self.policy_specs.items():
            if configs[pid].learns and pid not in shared[1:]:  # the learners of a shared replay allocate one
                algo, section, sharing = self.config.recipe(pid)
                plans["shared replay" if pid in shared else pid] = learner_plan(spec, algo, section, sharing)
        total = sum(p.nbytes() for p in plans.values())
        per_checkpoint = sum(p.checkpoint_nbytes() for p in plans.values())
        parts = [f"{n}: {p.n_buffers} x {p.capacity:,} x {row_nbytes(p.fields):,} B" for n, p in plans.items()]
        if self.verbose:
            print(
                f"replay memory {human_bytes(total)} ({'; '.join(parts)}); a checkpoint holds the filled rows "
                f"(up to {human_bytes(per_checkpoint)}) and the networks with their optimiser state"
            )
        available = available_memory()
        if available is None or total <= available:
            return
        key = f"{self.config.algorithm_section()}.buffer_size"
        capacity = next(iter(plans.values())).capacity
        fits = int(capacity * available / total)
        raise ConfigError(
            f"the replays need {human_bytes(total)} ({'; '.join(parts)}) but this machine has "
            f"{human_bytes(available)} of memory available: lower {key} (about {fits:,} fits now) or free memory"
        )

    def _reported_index(self, names: list[str]) -> int:
        """The group whose reward is the run's figure: ``report_group``, else the first group
        a learning policy drives in the first match (resolved here: a user env's groups are
        known only once it is built)."""
        if self.config.report_group is not None:
            return names.index(self.config.report_group)
        first = compile_matches(self.matches[:1], self.venv.groups, 1)
        driven = {s.group for pid in self.learners if pid in first for s in first[pid].segments}
        return min(driven, default=0)

    @property
    def sharing_on(self) -> bool:
        return any(learner.relay is not None for learner in self.learners.values())

    def _saved_policy(self, pid: str, policy: PolicyConfig) -> tuple[dict[str, Any], str]:
        """A frozen policy's networks from its checkpoint or pretrained run (the policy file
        only, read as data) and where they came from."""
        source = Path(policy.checkpoint) if policy.checkpoint else self._pretrained_run(policy.pretrained or "", policy.pretrained_seed)
        checkpoint = source
        if not (source / MANIFEST).is_file():
            found = list_checkpoints(source / "checkpoints") or list_checkpoints(source)
            if not found:
                hint = f"; train it first: relayrl train {policy.pretrained} --seed {policy.pretrained_seed}" if policy.pretrained else ""
                raise CheckpointError(f"policy {pid!r} is frozen but {source} has no checkpoint{hint}")
            checkpoint = found[-1]
        saved = load_policies(checkpoint)
        key = policy.pretrained_policy or pid
        if key not in saved:
            raise CheckpointError(f"{checkpoint} holds policies {sorted(saved)}, not {key!r} (set policies.{pid}.pretrained_policy)")
        self.frozen_sources[pid] = str(checkpoint)
        return saved[key], str(checkpoint)

    def _pretrained_run(self, preset: str, seed: int) -> Path:
        from relayrl.experiment.presets import load_preset

        if self.run_dir is None:
            raise ConfigError(f"pretrained={preset!r} is looked up under a run directory's runs root; without one pass checkpoint=PATH")
        config = load_preset(preset).model_copy(update={"seed": seed})
        run = run_dir_for(config, self.run_dir.parent.parent)
        done = list_checkpoints(run / "checkpoints")
        if not done or checkpoint_steps(done[-1]) < config.total_steps:
            have = f"it stopped at {checkpoint_steps(done[-1]):,} env steps" if done else "it has not been run"
            raise CheckpointError(
                f"pretrained opponents {preset} seed {seed} are not complete ({have}; needs {config.total_steps:,}): "
                f"run relayrl train {preset} --seed {seed} --out {self.run_dir.parent.parent}"
            )
        return run

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs, as data. Replay rows are views of the live buffers (no
        second copy in memory): write the state, as ``save`` does, before training on."""
        if self.runners is not None:  # a runner that died since the last fragment: its copies' episodes end first
            self._end_copies(self.runners.revive(self.counters.env_steps))
        if self.learners_away():  # the learners' state comes home, where it is saved from
            self.learner_actors.bring_home()
        return {
            "config": self.config.model_dump(mode="json"),
            "counters": asdict(self.counters),
            "window": asdict(self.window),
            "recent_returns": list(self.recent_returns),
            "policies": {name: policy.state_dict() for name, policy in self.policies.items()},
            **self._env_state(),
            "round_returns": [r.tolist() for r in self.round_returns],
            "round_copies": self.round_copies,
            "schemes": {scheme.name: scheme.state_dict() for scheme in self.schemes},
            "shared_replay": self.shared_replay.state_dict() if self.shared_replay is not None else None,
        }

    def _env_state(self) -> dict[str, Any]:
        """Where the env copies stand: this process's, or each runner's."""
        if self.runners is not None:
            return {"env": None, "observed": [], "carry": {}, "runners": self.runners.get_state()}
        return {"env": self.venv.get_state(), "observed": [asdict(seen) for seen in self.rollout.observed or []], "carry": self.rollout.carry}

    def policy_dict(self) -> dict[str, Any]:
        return {name: policy.policy_state() for name, policy in self.policies.items()}

    def load_policies(self, checkpoint: Path) -> None:
        """Loads every policy's networks from a checkpoint of this run (for evaluation)."""
        saved = load_policies(checkpoint)
        for name, policy in self.policies.items():
            policy.load_policy_state(saved[name], str(checkpoint))

    def load_state_dict(self, state: dict[str, Any], source: str = "the checkpoint") -> None:
        check_resumable(state["config"], self.config, source)
        self.counters = Counters(**state["counters"])
        self.window = Window(**state["window"])
        self.recent_returns = deque(state["recent_returns"], maxlen=100)
        for name, policy in self.policies.items():
            policy.load_state_dict(state["policies"][name])
        if self.shared_replay is not None:
            self.shared_replay.load_state_dict(state["shared_replay"])
        if self.config.rounds:
            self._enter_round(self.counters.round)
            self.round_returns = [np.array(r) for r in state["round_returns"]]
            self.round_copies = list(state["round_copies"])
            for scheme in self.schemes:
                scheme.load_state_dict(state["schemes"][scheme.name])
        if self.config.backend.kind == "ray":
            self.saved_runners = state["runners"]  # restored once the runners have started
            return
        if state["env"] is not None:
            try:
                self.venv.set_state(state["env"])
                rollout = self.rollout
                rollout.observed = [GroupObs(**seen) for seen in state["observed"]]
                rollout.carry = state["carry"]
                return
            except ValueError as error:  # e.g. saved by pursuit-pz's copies, resumed on the vectorised pursuit
                reason = f"the saved env state does not fit this env ({error})"
        else:
            reason = f"{self.config.env.name}'s state cannot be saved in a checkpoint"
        print(
            f"note: {reason}: resuming from {source}, in-flight episodes restart from new resets "
            f"(learners, replays, selectors and counters resume exactly)",
            file=sys.stderr,
        )
        self.rollout.reset(self.config.seed + self.counters.iterations)

    def resume_from_latest(self) -> int:
        """Loads the newest checkpoint of the run directory; returns its env step (0 if none)."""
        checkpoints = list_checkpoints(self._checkpoint_dir())
        if not checkpoints:
            return 0
        self.load_state_dict(load_checkpoint(checkpoints[-1]), str(checkpoints[-1]))
        return self.counters.env_steps

    def _checkpoint_dir(self) -> Path:
        assert self.run_dir is not None
        return self.run_dir / "checkpoints"

    def save(self) -> Path | None:
        if self.run_dir is None:
            return None
        return save_checkpoint(
            self._checkpoint_dir(), self.counters.env_steps, self.state_dict(), self.config.keep_checkpoints, self.policy_dict()
        )

    # ------------------------------------------------------------------ loop
    def _reported_learner(self) -> Learner:
        """The learner of the policy named after the reported group, else the first one."""
        return self.learners.get(self.venv.groups[self.reported].name) or next(iter(self.learners.values()))

    @property
    def updates(self) -> int:
        """Gradient steps per agent of the reported learner so far."""
        return self._reported_learner().updates

    def epsilon(self) -> float:
        """The reported learner's epsilon now (NaN where it explores otherwise)."""
        learner = self._reported_learner()
        return learner.exploration(self.counters.env_steps) if learner.algorithm.exploration_name == "epsilon" else math.nan

    def _collect(self) -> dict[str, dict[str, np.ndarray]]:
        """Steps the vector env for one fragment; returns per-policy ``[T, W, N_p, ...]`` step arrays."""
        n_steps = self.config.backend.fragment_steps or max(1, self.fragment_length // self.venv.num_envs)
        if self.runners is not None:
            steps, episodes, restarted = self.runners.collect(n_steps, self.counters.env_steps)
            self._end_copies(restarted)
        else:
            steps, episodes = self.rollout.collect(n_steps, self.counters.env_steps), self.venv.drain_episodes()
        collected = n_steps * self.venv.num_envs
        if self.round_ends and self.counters.env_steps + collected >= self.round_ends[self.counters.round]:
            for fragment in steps.values():  # the round ends with this fragment: so do its episodes
                end_episodes(fragment)
        self.window.episode_returns += episodes.returns
        self.window.episode_lengths += episodes.lengths
        self.recent_returns.extend(float(r[self.reported]) for r in episodes.returns)
        self.round_returns += episodes.returns
        self.round_copies += episodes.copies
        self.counters.env_steps += collected
        self.window.env_steps += collected
        return steps

    def iteration(self) -> None:
        """Collect; every learner observes its policy's fragment, then learns (SPEC §1.1)."""
        fragments = self._collect()
        for name, learner in self.learners.items():
            if name in fragments:  # a round may give a policy no entity
                self.counters.agent_steps += learner.observe(fragments[name])
        if self.config.shared_replay is not None:
            self._fill_shared_replay(self.config.shared_replay.between)
        for learner in self.learners.values():
            learner.learn(self.counters.env_steps)
        if self.learner_actors is not None:  # the networks the next fragment acts with
            for pid, networks in self.learner_actors.settle().items():
                self.policies[pid].load_policy_state(networks, "its learner actor")
        if self.config.relay is not None:
            self._relay_between(self.config.relay.between)
        self.counters.iterations += 1

    def _fill_shared_replay(self, between: list[str]) -> None:
        """The fragment's rows of every learner of ``shared_replay.between`` into the one
        replay, in the list's order, before any of them draws (paper 001, Algorithm 1: the K
        agents store, then each samples from the shared buffer); with learner actors the
        rows go from actor to actor, and the driver passes their references."""
        replay = self.learner_actors.shared if self.learners_away() else self.shared_replay
        size = replay.add([self.learners[pid].shared_rows() for pid in between])
        for pid in between:
            self.learners[pid].shared_size(size)

    def _relay_between(self, between: list[str]) -> None:
        """Every learner's selected transitions of this fragment to every other learner of
        ``relay.between``, after all have learned on it (paper 000 section 4: the SUPER relay
        between agents trained apart): one batch per sender, stored before the next fragment."""
        boxes = {pid: self.learners[pid].outgoing() for pid in between}
        for receiver in between:
            parts = [box for sender, (box, sent) in boxes.items() if sender != receiver and sent]
            if parts:
                self.learners[receiver].incoming(parts)
        for pid, (_, sent) in boxes.items():
            self.window.relayed_out[pid] = self.window.relayed_out.get(pid, 0) + sent

    def _report(self) -> dict[str, float]:
        c, w = self.counters, self.window
        nan = math.nan
        names = [spec.name for spec in self.venv.groups]
        returns = np.array(w.episode_returns).reshape(-1, len(names))
        windows = {name: learner.drain_window() for name, learner in self.learners.items()}
        learner = self._reported_learner()
        loss_window = windows[learner.name]
        loss = learner.algorithm.loss_metric
        relays = [learner.relay.drain() for learner in self.learners.values() if learner.relay is not None]
        offered = np.concatenate([r.offered for r in relays]) if relays else np.zeros(0)
        sent = np.concatenate([r.sent for r in relays]) if relays else np.zeros(0)
        bandwidth = np.divide(sent, offered, out=np.full(sent.shape, np.nan), where=offered > 0)
        row = {
            "env_steps": c.env_steps,
            "agent_steps": c.agent_steps,
            "updates": learner.updates,
            "episodes": len(returns),
            "episode_reward_mean": float(returns[:, self.reported].mean()) if len(returns) else nan,
            "episode_reward_mean_100": float(np.mean(self.recent_returns)) if self.recent_returns else nan,
            "eval_reward_mean": nan,
            "episode_len_mean": float(np.mean(w.episode_lengths)) if w.episode_lengths else nan,
            "bandwidth_actual": float(np.nanmean(bandwidth)) if (offered > 0).any() else nan,
            "transitions_relayed": int(sent.sum()),
            "bytes_relayed": sum(r.bytes_sent for r in relays),
            "td_loss": loss_window.mean(loss),
            "grad_norm": loss_window.mean("grad_norm"),
            "epsilon": self.epsilon(),
            "sps": w.env_steps / w.seconds if w.seconds > 0 else nan,
            "updates_per_s": loss_window.updates / w.seconds if w.seconds > 0 else nan,
            "wall_s": c.wall_s,
        }
        if self.config.rounds:
            row["round"] = c.round
        if self._one_policy():
            for key in learner.metric_columns:
                row[key] = loss_window.mean(key)
        else:
            for g, name in enumerate(names):
                row[f"episode_reward_mean/{name}"] = float(returns[:, g].mean()) if len(returns) else nan
            for pid, window in windows.items():
                row[f"td_loss/{pid}"] = window.mean(self.learners[pid].algorithm.loss_metric)
            between = self.config.relay.between if self.config.relay is not None else []
            for pid in between:
                sent = self.window.relayed_out.get(pid, 0)
                row[f"relayed_out/{pid}"] = sent
                row[f"relayed_out_bytes/{pid}"] = sent * self.learners[pid].bytes_per_transition
            if between:
                row["relay_seconds"] = sum(windows[pid].sums.get("relay_s", 0.0) for pid in between)
            if self.config.shared_replay is not None:
                shared = self.config.shared_replay.between
                for pid in shared:
                    row[f"dps_weight/{pid}"] = windows[pid].mean("dps_weight")
                row["draw_seconds"] = sum(windows[pid].sums.get("draw_s", 0.0) for pid in shared)
        if c.env_steps >= c.next_eval:
            evaluated = self.evaluate_greedy(self.config.eval.episodes)
            row["eval_reward_mean"] = float(evaluated[:, self.reported].mean())
            if len(names) > 1:
                for g, name in enumerate(names):
                    row[f"eval_reward_mean/{name}"] = float(evaluated[:, g].mean())
            while c.next_eval <= c.env_steps:
                c.next_eval += self.config.eval.interval
        self.window = Window()
        return row

    def _one_policy(self) -> bool:
        return len(self.venv.groups) == 1 and len(self.policies) == 1

    def metric_columns(self) -> tuple[str, ...]:
        """The learner's columns after the standard ones (one policy on one group), or
        per-group rewards and per-learner losses."""
        names = [spec.name for spec in self.venv.groups]
        rounds = ("round",) if self.config.rounds else ()
        if self._one_policy():
            return (*rounds, *self._reported_learner().metric_columns)
        return (
            *rounds,
            *(f"episode_reward_mean/{n}" for n in names),
            *(f"eval_reward_mean/{n}" for n in names),
            *(f"td_loss/{n}" for n in self.learners),
            *self._relay_columns(),
            *self._shared_replay_columns(),
        )

    def _relay_columns(self) -> tuple[str, ...]:
        """``relay.between``: what each learner sent to every other one (each channel from a
        sender carries the same transitions), and the seconds the learners spent handing out,
        fetching and storing relayed batches (a timing)."""
        if self.config.relay is None:
            return ()
        between = self.config.relay.between
        return (*(f"relayed_out/{pid}" for pid in between), *(f"relayed_out_bytes/{pid}" for pid in between), "relay_seconds")

    def _shared_replay_columns(self) -> tuple[str, ...]:
        """``shared_replay.between``: each learner's mean DPS weight on the others' rows (1
        without a correction), and the seconds the learners spent drawing from the shared
        replay (gathering the rows, from another actor where it lives in one: a timing)."""
        if self.config.shared_replay is None:
            return ()
        return (*(f"dps_weight/{pid}" for pid in self.config.shared_replay.between), "draw_seconds")

    def evaluate_greedy(self, episodes: int) -> np.ndarray:
        """Greedy episodes ``[episodes, n_groups]``: each group's reward summed over its
        entities; for K copies of a single-agent env, each agent's ``episodes`` episodes
        without exploration noise, ``[episodes * K, 1]`` (paper 001, C.6)."""
        seed = self.config.seed + self.config.eval.seed_offset
        policies = {**self.policies, **self.eval_policies}  # acting greedily: frozen ones with their own small exploration
        matches = self.config.eval.match or self.matches
        if not self.venv.independent_episodes:
            return evaluate(self.factory, policies, matches, episodes, seed)
        # Gymnasium copies are kept between evaluations: building MuJoCo models costs more
        # than it does for the other envs, and a reset with the same seeds restarts them alike
        if self.eval_venv is None or self.eval_venv.num_envs != episodes:
            self.close_eval_envs()
            self.eval_venv = make_vector_env(self.factory, episodes)
        return evaluate(self.factory, policies, matches, episodes, seed, self.eval_venv)

    def close_eval_envs(self) -> None:
        if self.eval_venv is not None:
            self.eval_venv.close()
            self.eval_venv = None

    def _print_progress(self, row: dict[str, float]) -> None:
        c, total = self.counters, self.config.total_steps
        sps = row["sps"]
        eta = (total - c.env_steps) / sps if sps and sps > 0 else math.nan
        parts = [
            f"[{self.config.preset} s{self.config.seed}]",
            *([f"round {c.round + 1}/{len(self.config.rounds)}"] if self.config.rounds else []),
            f"steps {c.env_steps:,}/{total:,} ({100 * c.env_steps / total:.1f}%)",
            f"{sps:,.0f} sps",
            f"{row['updates_per_s']:,.0f} upd/s",
            f"reward {row['episode_reward_mean']:.2f}",
        ]
        if not math.isnan(row["eval_reward_mean"]):
            parts.append(f"eval {row['eval_reward_mean']:.2f}")
        if self.sharing_on:
            parts.append(f"bw {row['bandwidth_actual']:.3f}")
        parts.append(f"eta {eta / 60:.1f} min" if math.isfinite(eta) else "eta -")
        print(" | ".join(parts), flush=True)

    def _start(self) -> int:
        resumed_at = 0
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            assert self.lock is not None
            self.lock.acquire()
            for tmp in self._checkpoint_dir().glob(".tmp_*"):  # left by a crash during a save
                shutil.rmtree(tmp, ignore_errors=True)
            resumed_at = self.resume_from_latest()
            # metrics first: a resume that cannot rewrite them stops before anything else is written
            self.metrics = MetricsWriter(self.run_dir, resumed_at, self.counters.metric_rows, self.metric_columns())
            self.counters.metric_rows = self.metrics.rows
            if resumed_at == 0 or self.changes:
                write_atomically(self.run_dir / CONFIG_FILE, yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False))
            with (self.run_dir / "provenance.yaml").open("a") as handle:
                entry = {**provenance(), "resumed_at": resumed_at}
                if self.changes:
                    entry["changed"] = {key: list(values) for key, values in self.changes.items()}
                if self.frozen_sources:
                    entry["frozen_policies_from"] = self.frozen_sources
                yaml.safe_dump([entry], handle, sort_keys=False)
        if self.config.backend.kind == "ray":
            fresh = self.saved_runners is None
            if not (fresh and self.config.rounds):  # a round's start starts them
                self._start_actors(self.config.seed)
        else:
            fresh = self.rollout.observed is None
            if fresh:
                self.rollout.reset(self.config.seed)
        if fresh and self.config.rounds:
            self._begin_round()
        return resumed_at

    def _start_actors(self, seed: int) -> None:
        """Ray with the CPUs the run's actors reserve, its learner actors (with
        ``backend.learners=actors``), then its env runners reset with ``seed``."""
        b = self.config.backend
        learners = len(self.learners) if b.learners == "actors" else 0
        need = b.runners * b.runner_cpus + learners * b.learner_cpus
        ray, _ = start_ray(b.address, max(os.cpu_count() or 1, math.ceil(need)))
        total = ray.cluster_resources().get("CPU", 0.0)
        if need > total:
            raise ConfigError(
                f"backend.runners={b.runners} x runner_cpus={b.runner_cpus:g} and {learners} learner actors x learner_cpus={b.learner_cpus:g} "
                f"need {need:g} CPUs but the Ray cluster has {total:g}: lower them, or join a larger cluster (backend.address)"
            )
        if learners and self.learner_actors is None:
            self.learner_actors = RayLearners(
                self.learners, self.learner_builds, ray, b.learner_cpus, self.config.torch_threads, self.shared_replay
            )
        elif learners:  # a new round: the learners as its schemes and hooks left them
            self.learner_actors.send_away()
        if learners:
            self.learners = dict(self.learner_actors.remote)
        self._start_runners(seed)

    def learners_away(self) -> bool:
        """Whether the learners learn in their actors now (the trainer drives their proxies)."""
        return self.learner_actors is not None and any(remote is self.learners.get(pid) for pid, remote in self.learner_actors.remote.items())

    def _call_learners_home(self) -> None:
        """Every learner actor's state into the driver's copies, which the trainer drives
        until the actors take over again (a round's schemes and hooks work on them)."""
        assert self.learner_actors is not None
        self.learner_actors.bring_home()
        self.learners = {pid: remote.home for pid, remote in self.learner_actors.remote.items()}

    def _stop_learner_actors(self) -> None:
        """Closes the learner actors; the driver's copies of the learners stay."""
        assert self.learner_actors is not None
        actors, self.learner_actors = self.learner_actors, None
        actors.close()
        self.learners = {pid: remote.home for pid, remote in actors.remote.items()}

    def _start_runners(self, seed: int) -> None:
        """The Ray env runners of the current round, with copies of the policies as they are
        now, reset with ``seed``; a resumed run's runners continue from their saved states
        where the env's can be restored."""
        b = self.config.backend
        env = self.config.round_env(self.counters.round) if self.config.rounds else self.config.env
        self.runners = RayRunners(env, self.matches, self.policies, b.runners, b.address, b.runner_cpus, self.config.seed)
        saved, self.saved_runners = self.saved_runners, None
        if saved is None:
            self.runners.reset(seed)
            return
        if len(saved) == b.runners and self.runners.set_state(saved):
            return
        print(
            f"note: the runners' env states of this checkpoint cannot be restored ({len(saved)} saved for {b.runners} runners): "
            "in-flight episodes restart from new resets (learners, replays, selectors and counters resume exactly)",
            file=sys.stderr,
        )
        self.runners.reset(self.config.seed + self.counters.iterations)

    def _end_copies(self, copies: list[tuple[int, int]]) -> None:
        """The learners end the episodes in flight of these copies (first, count): their env
        runner died and a new one restarted them."""
        for pid, where in self.rollout.assignments.items():
            if pid not in self.learners:
                continue
            restarted = np.zeros(where.n_workers, bool)
            for first, count in copies:
                restarted |= (where.worker_copy >= first) & (where.worker_copy < first + count)
            if restarted.any():
                self.learners[pid].end_workers(np.flatnonzero(restarted))

    def _stop_runners(self) -> None:
        """Closes the runners; with one, the driver's policies take over its exploration
        streams first (so that the next runners continue them, as the local backend does)."""
        assert self.runners is not None
        if len(self.runners.actors) == 1:
            (state,) = self.runners.get_state()
            for pid, rng_state in state["rngs"].items():
                self.policies[pid].acting_rng.bit_generator.state = rng_state
        self.runners.close()
        self.runners = None

    def _write_report(self) -> None:
        c = self.counters
        row = self._report()
        while c.next_report <= c.env_steps:
            c.next_report += self.config.report_interval
        self.history.append(row)
        if self.metrics is not None:
            self.metrics.write(row)
            c.metric_rows = self.metrics.rows
        if self.verbose:
            self._print_progress(row)

    def _checkpoint(self) -> None:
        c = self.counters
        while c.next_checkpoint <= c.env_steps:
            c.next_checkpoint += self.config.checkpoint_interval
        self.save()

    def _on_sigterm(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    def train(self) -> list[dict[str, float]]:
        """Runs until ``total_steps``; returns the metric rows written by this call.

        Ctrl-C stops at once: the metrics written so far and the last checkpoint are kept
        (checkpoints are atomic), and ``relayrl resume`` continues from that checkpoint.
        SIGTERM (a scheduler's or a grid's stop) finishes the current iteration, saves a
        checkpoint there and then stops as Ctrl-C does, so a stopped run loses nothing.
        """
        try:
            self._start()
        except BaseException:
            self._close_run()
            raise
        c = self.counters
        self.stop_requested = False
        handles_sigterm = self.run_dir is not None and threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, self._on_sigterm) if handles_sigterm else None
        try:
            tick = time.perf_counter()
            while c.env_steps < self.config.total_steps:
                if self.stop_requested:
                    saved = list_checkpoints(self._checkpoint_dir())
                    if not saved or checkpoint_steps(saved[-1]) != c.env_steps:
                        self.save()
                    print(f"\nstopped by SIGTERM at env step {c.env_steps:,}, checkpoint saved", file=sys.stderr)
                    raise KeyboardInterrupt
                self.iteration()
                now = time.perf_counter()
                self.window.seconds += now - tick
                c.wall_s += now - tick
                tick = now
                at_end = c.env_steps >= self.config.total_steps
                report_due = c.env_steps >= c.next_report
                checkpoint_due = c.env_steps >= c.next_checkpoint or at_end
                round_over = bool(self.round_ends) and c.env_steps >= self.round_ends[c.round]
                if round_over:
                    if self.learner_actors is not None:  # schemes and hooks work on the learners at home
                        self._call_learners_home()
                    self._end_round()
                next_round = round_over and not at_end  # entered after the report, then saved
                if checkpoint_due and not report_due and not next_round:
                    # off the report grid (a budget's end): the checkpoint keeps the window
                    # unreported, so a resumed run writes the rows an uninterrupted one does
                    self._checkpoint()
                if report_due or at_end:
                    with self.timer("logging"):
                        self._write_report()
                if next_round:
                    self._enter_round(c.round + 1)
                    self._begin_round()
                if (checkpoint_due and report_due) or next_round:
                    self._checkpoint()
                tick = time.perf_counter()  # evaluation and saving are not training throughput
            if self.learners_away():
                self._call_learners_home()
            if self.learner_actors is not None:
                self._stop_learner_actors()
        except NonFiniteError as error:
            last = list_checkpoints(self._checkpoint_dir()) if self.run_dir else []
            kept = f"the last checkpoint {last[-1].name} and the metrics so far are kept" if last else "no checkpoint was written"
            raise NonFiniteError(
                f"{error}, in the fragment after env step {c.env_steps:,}. The run stopped there; {kept}. "
                f"Fix the source (the environment's outputs; for a diverging loss a lower learning rate), then resume"
            ) from None
        except KeyboardInterrupt:
            if self.verbose:
                last = list_checkpoints(self._checkpoint_dir()) if self.run_dir else []
                where = f"; last checkpoint {last[-1].name}, continue with: relayrl resume {self.run_dir}" if last else ""
                print(f"\ninterrupted at env step {c.env_steps:,}{where}", file=sys.stderr)
            raise
        finally:
            if handles_sigterm:
                signal.signal(signal.SIGTERM, previous)
            if self.learner_actors is not None:  # stopped on an error: the checkpoint on disk is the state
                self._stop_learner_actors()
            self._close_run()
        return self.history

    def _close_run(self) -> None:
        """Closes the metrics and releases the run directory (also after a failed start)."""
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        if self.lock is not None:
            self.lock.release()

    def close(self) -> None:
        self.venv.close()
        self.close_eval_envs()
        if self.runners is not None:
            self._stop_runners()
