"""Typed, validated run configuration (pydantic). A wrong key or value fails before training
starts with the key path, the bad value and what is allowed."""

import importlib.util
import os
import re
import sysconfig
import traceback
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BeforeValidator, Discriminator, Field, PlainValidator, SerializeAsAny, Tag, ValidationError, field_validator, model_validator

from relayrl.algos import ALGORITHMS
from relayrl.algos.algorithm import SECTIONS
from relayrl.algos.sections import ActorCriticConfig, CentralisedConfig, DQNConfig, OnPolicyConfig, ValueDecompositionConfig
from relayrl.arena.match import Match, check_match_syntax, default_match, match_policy_ids
from relayrl.arena.policy_config import PolicyConfig
from relayrl.arena.round import HooksConfig, RoundConfig
from relayrl.arena.schemes.pbt import PBTConfig
from relayrl.arena.schemes.selfplay import SelfPlayConfig
from relayrl.arena.schemes.tournament import TournamentConfig, round_robin
from relayrl.core.errors import ConfigError
from relayrl.core.registry import import_plugins
from relayrl.core.strict import Strict
from relayrl.envs.pursuit import PursuitSection
from relayrl.envs.registry import ENVS, MODULE_PATH, PettingZooSection
from relayrl.envs.section import EnvSection
from relayrl.experiment.config_errors import format_error
from relayrl.experiment.identity import config_hash
from relayrl.nets.model_config import ModelConfig
from relayrl.sharing.config import SharingConfig


def nested_error(error: ValidationError, model: Any, where: str) -> str:
    """The errors of validating a section at ``where`` (a policy's changes to it), each
    line with its full key path (``policies.walker.dqn.lr: ...``)."""
    lines = format_error(error, model).removeprefix("invalid configuration:\n  ").split("\n  ")  # one per error, in order
    located = [any(not str(part).startswith("function-after") for part in item["loc"]) for item in error.errors()]
    return "\n  ".join(f"{where}.{line}" if has_path else f"{where}: {line}" for line, has_path in zip(lines, located))


def import_plugin(module: Any) -> None:
    """Imports a module of ``plugins``, refusing with the fix a name that is not a module's or
    a module that does not import (naming the line of its own that raised)."""
    if not isinstance(module, str):
        raise ValueError(f"plugins: {module!r} is not a module name: give the module's name, e.g. my_algos for my_algos.py")
    if module.endswith(".py"):
        raise ValueError(f"plugins: {module} is a file name: give the module's, {module.removesuffix('.py')}")
    if not re.match(MODULE_PATH, module):
        fixed = re.sub(r"\W", "_", module)
        raise ValueError(f"plugins: {module} is not a Python module name (letters, digits and _, between dots): rename {module}.py to {fixed}.py "
                         f"and give {fixed}")
    try:
        import_plugins([module])
    except ModuleNotFoundError as error:
        if error.name is not None and (module == error.name or module.startswith(error.name + ".")):
            raise ValueError(f"plugins: {module} cannot be imported ({error}): put {module.replace('.', '/')}.py in the working directory "
                             f"(here {os.getcwd()}) or on PYTHONPATH, or install its package") from None
        raise ValueError(f"plugins: {module} imports {error.name}, which is not installed: install it (pip install ...)") from None
    except Exception as error:  # the plugin's own code failed: say where, not relayrl's traceback
        frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith(("<", *LIBRARIES))]
        where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
        raise ValueError(f"plugins: importing {module} raised {type(error).__name__}: {error}{where}") from None


# relayrl's own package and the installed libraries: the frames a plugin's error skips to name its own line
LIBRARIES = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), *{sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")})
LATER = "registered-later"  # the union member of env sections registered after this module was imported


def _env_kind(value: Any) -> str:
    """The union member of an env section: a built-in name's, a module path's (PettingZoo),
    or that of a section registered later (a plugin's own section class)."""
    name = value.get("name", "pursuit") if isinstance(value, dict) else getattr(value, "name", "pursuit")
    if name not in ENVS:
        return PettingZooSection.__name__
    section = ENVS[name].section
    return section.__name__ if section in ENV_SECTIONS else LATER


def later_sections(env: Any) -> dict[str, type[EnvSection]]:
    """The section class behind the ``registered-later`` tag for this env data (error
    messages list its keys), where its env was registered after the union was built."""
    name = env.get("name") if isinstance(env, dict) else None
    return {LATER: ENVS[name].section} if isinstance(name, str) and name in ENVS and ENVS[name].section not in ENV_SECTIONS else {}


def _later_section(value: Any) -> EnvSection:
    """An env section whose class was registered after the union was built, validated by its
    own class (its errors keep their paths: ``env.settings.size``)."""
    if isinstance(value, EnvSection):
        return value
    return ENVS[value.get("name")].section.model_validate(value)


GYM_MODULE_ID = r"^[A-Za-z_][\w.]*:[^:]+$"  # a Gymnasium id with the module that registers it, as gymnasium.make takes it


def _named_env(value: Any) -> Any:
    """``env.name`` may be a Gymnasium id (``Pendulum-v1``): K copies of it, the ``gym`` env;
    any other name that is neither built in nor a module path is refused with the choices."""
    if not isinstance(value, dict) or value.get("name", "pursuit") in ENVS:
        return value
    name = value["name"]
    if isinstance(name, str) and re.match(MODULE_PATH, name) and ("." in name or importlib.util.find_spec(name) is not None):
        return value  # a module path, or a module of one word that imports (a typo of a built-in name does not)
    import gymnasium

    from relayrl.envs.gym_multiagent import multiagent_env_id

    if isinstance(name, str) and multiagent_env_id(name):  # before the registry: importing lbforaging registers its ids there
        return {**value, "name": "gym-multiagent", "settings": {**value.get("settings", {}), "env_id": name}}
    if isinstance(name, str) and (name in gymnasium.registry or re.match(GYM_MODULE_ID, name)):
        settings = {**value.get("settings", {}), "env_id": name}  # module:Id is checked, its module imported, with the gym env's settings
        return {**value, "name": "gym", "settings": settings}
    base = name.rsplit("-v", 1)[0] if isinstance(name, str) and "-v" in name else None
    versions = sorted(k for k in gymnasium.registry if base and k.rsplit("-v", 1)[0] == base)
    if versions:  # another version of a Gymnasium id (Taxi-v3 where the installed gymnasium has Taxi-v4)
        raise ValueError(f"{name!r} is not a registered Gymnasium id, {' and '.join(versions)} {'is' if len(versions) == 1 else 'are'}: set env.name to it")
    raise ValueError(
        f"unknown env {name!r}: use a built-in ({', '.join(ENVS)}; user: the env_factory given to train in Python), a PettingZoo "
        f"Parallel env's module path, a package and its module (pettingzoo.sisl.multiwalker_v9, mpe2.simple_spread_v3) or a module of the "
        f"working directory with a parallel_env() (my_env for my_env.py), or a Gymnasium id "
        f"(Pendulum-v1; multi-agent: Foraging-8x8-2p-2f-v3, rware-tiny-2ag-v2; one your module registers: my_module:MyEnv-v0); an env your "
        f"module adds to relayrl's ENVS needs that module in the config's plugins: [my_module]. Modules are imported from the working "
        f"directory, here {os.getcwd()}"
    )


# Every built-in env's section (registered beside the env), the section of a PettingZoo
# module path, and the sections of envs registered later: the union is built when this module
# is imported, after ``relayrl.envs`` registered the built-in envs; a later one's class
# validates its own (``plugins`` import their modules before the config is read).
ENV_SECTIONS: tuple[type[EnvSection], ...] = (*dict.fromkeys(ENVS[name].section for name in ENVS), PettingZooSection)
ENV_TAGS = (*(section.__name__ for section in ENV_SECTIONS), LATER)
EnvConfig = Annotated[
    Union[(*(Annotated[section, Tag(section.__name__)] for section in ENV_SECTIONS), Annotated[SerializeAsAny[EnvSection], PlainValidator(_later_section), Tag(LATER)])],
    Discriminator(_env_kind),
    BeforeValidator(_named_env),
]


class EvalConfig(Strict):
    interval: int = Field(50_000, ge=0, description="env steps between greedy evaluations; 0 = off")
    episodes: int = Field(5, ge=1)
    max_episode_steps: int = Field(
        27_000, ge=1, description="env steps after which an evaluation episode is cut, its return so far counting (a greedy policy may never "
        "end an episode of an env without a time limit); 27,000 is Atari's 108,000 frames, above every built-in env's own limit"
    )
    seed_offset: int = 10_000
    policies: dict[str, PolicyConfig] = Field(
        default_factory=dict, description="policies that only play evaluations (a held-out opponent): frozen, random or scripted"
    )
    match: list[Match] = Field(default_factory=list, description="the matches evaluations play (default: the run's, in its current round)")

    @model_validator(mode="after")
    def _held_out(self) -> "EvalConfig":
        learning = [pid for pid, p in self.policies.items() if p.kind in ("learning", "snapshot")]
        if learning:
            raise ValueError(f"eval.policies {learning} would learn or follow a learner: evaluation-only policies are frozen, random or scripted")
        check_match_syntax(self.match)
        return self


class RelayConfig(Strict):
    """The SUPER relay between learners (paper 000 section 4: agents trained apart, sharing
    over a narrow channel): every learner of ``between`` sends the transitions its own
    selection rule picked in a fragment to every other one, which stores them in each of
    its agents' replays once all have learned on that fragment (one batch per sender and
    fragment; with learner actors, an object in Ray's store that receivers fetch)."""

    between: list[str] = Field(min_length=2, description="learning policies that relay to each other (same observations and actions)")


class SharedReplayConfig(Strict):
    """DASE's shared replay between learners (paper 001, section 3; SPEC §1.2): every
    learner of ``between`` stores its agents' transitions in one replay, tagged with the
    agent that collected them, and draws its batches from all of it with the DPS
    correction of its own ``sharing`` (or none: ES-DASE). The learners may learn in
    different Ray actors (``backend.learners: actors``); the replay then lives in an actor
    of its own. Its capacity is the learners' ``buffer_size``."""

    between: list[str] = Field(min_length=2, description="learning policies with sharing.replay=shared that fill and draw from one replay")


class BackendConfig(Strict):
    """Where the env copies of one run step and its learners learn (DESIGN.md §3,
    backends). ``local``: in the training process. ``ray``: ``runners`` Ray actors, each
    stepping a contiguous slice of the copies with acting copies of the policies, which get
    the learners' networks once per fragment (one object in Ray's store). One runner acts as
    the local backend does (same metrics for the same seed); with more, each runner's copies
    and exploration draw from streams of their own. The learners stay in the driver, or with
    ``learners: actors`` learn in a Ray actor per learning policy (the same numbers)."""

    kind: Literal["local", "ray"] = "local"
    runners: int = Field(1, ge=1, description="ray: env-runner actors (each takes env.num_envs / runners copies)")
    address: str | None = Field(None, description="ray: the cluster to join (ray.init's address); None starts a local one")
    runner_cpus: float = Field(1.0, ge=0, description="ray: CPUs each runner actor reserves")
    learners: Literal["driver", "actors"] = Field(
        "driver", description="ray: 'actors' puts every learning policy's learner in a Ray actor of its own (the policies learn in parallel)"
    )
    learner_cpus: float = Field(1.0, ge=0, description="ray: CPUs each learner actor reserves")
    fragment_steps: int | None = Field(
        None, ge=1, description="steps of every env copy per fragment (default fragment_length / num_envs, at least 1): longer fragments "
        "send fewer messages, and act on networks up to that many steps old (the learners' updates per env step stay the same)"
    )


# The config sections algorithms register with (``AlgorithmEntry.section``): one other than
# ``dqn`` replaces it as the run's learner where it is set. Each is a field of RunConfig and of
# PolicyConfig (a policy's changes to it); ``_sections_declared`` below checks both.
LearnerSection = DQNConfig | ActorCriticConfig | ValueDecompositionConfig | OnPolicyConfig | CentralisedConfig
LEARNER_SECTIONS = SECTIONS[1:]


class RunConfig(Strict):
    preset: str = "custom"
    total_steps: int = Field(800_000, ge=1)
    seed: int = Field(0, ge=0, lt=2**63, description="NumPy and torch seeds are non-negative")
    env: EnvConfig = PursuitSection()
    model: ModelConfig = Field(ModelConfig(), description="the Q-network of dqn learners (torso and head sizes)")
    dqn: DQNConfig = DQNConfig()
    actor_critic: ActorCriticConfig | None = Field(None, description="continuous actions: the actor-critic learner (dqn is unused)")
    qmix: ValueDecompositionConfig | None = Field(None, description="value decomposition over each group's agents, on episodes (dqn is unused)")
    on_policy: OnPolicyConfig | None = Field(None, description="policy gradients on rollouts: ppo, mappo, a2c, seac (dqn is unused)")
    centralised: CentralisedConfig | None = Field(None, description="centralised critics on joint transitions: maddpg, matd3, masac (dqn is unused)")
    sharing: SharingConfig = SharingConfig()
    policies: dict[str, PolicyConfig] = Field(
        default_factory=dict, description="by id; without a match each drives the group of its name, and groups without one learn"
    )
    match: list[Match] = Field(
        default_factory=list, description="per env copy {group: policy id per entity}, repeated over the copies; default each group to its policy"
    )
    scale: int | None = Field(None, ge=1, description="repeats the match list: env.num_envs = len(match) x scale")
    rounds: list[RoundConfig] = Field(
        default_factory=list, description="the run as rounds, each with its env steps, env.settings changes and matches; total_steps is their sum"
    )
    hooks: HooksConfig = HooksConfig()
    pbt: PBTConfig | None = Field(None, description="population-based training over the rounds (exploit and explore)")
    tournament: TournamentConfig | None = Field(None, description="round-robin tournament: every pairing each round, Elo ratings")
    selfplay: SelfPlayConfig | None = Field(None, description="self-play: the opponent plays snapshots of the learner, one drawn per round")
    relay: RelayConfig | None = Field(None, description="the SUPER relay between learning policies")
    shared_replay: SharedReplayConfig | None = Field(None, description="DASE's one replay shared by learning policies")
    backend: BackendConfig = BackendConfig()
    report_group: str | None = Field(None, description="team whose summed reward is reported; default the first one a learning policy drives")
    eval: EvalConfig = EvalConfig()
    report_interval: int = Field(8000, ge=1, description="env steps between metrics rows (the paper's bin)")
    checkpoint_interval: int = Field(50_000, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda or cuda:N")
    torch_threads: int = Field(1, ge=0, description="0 = torch's default")
    precision: Literal["float32", "bfloat16"] = Field(
        "float32",
        description="bfloat16: the networks' inner layers (convolutions, hidden layers) multiply in bfloat16 during updates, which are up "
        "to 2x faster where large products dominate, on CPUs with AVX512-BF16 or AMX and on recent GPUs; outputs, losses, targets and "
        "weights stay float32 (relayrl.nets.precision)",
    )
    keep_freed_memory: bool = Field(
        True, description="glibc: large arrays reuse memory the process freed instead of fresh pages (faster updates; the process keeps its peak memory)"
    )
    plugins: list[Annotated[str, Field(pattern=MODULE_PATH)]] = Field(
        default_factory=list, description="modules imported before the rest of the config is read, in every process of the run (the command "
        "line, resume, Ray's actors): yours that register algorithms, envs, selection rules or schemes (my_algos for my_algos.py)"
    )

    @model_validator(mode="before")
    @classmethod
    def _round_budget(cls, data: Any) -> Any:
        """With ``rounds``, ``total_steps`` is the sum of their steps (given, it must agree)."""
        if not isinstance(data, dict) or not isinstance(data.get("rounds"), list):
            return data
        steps = [r.get("steps") if isinstance(r, dict) else getattr(r, "steps", None) for r in data["rounds"]]
        if not steps or not all(isinstance(s, int) for s in steps):
            return data  # the round validation names what is missing
        if data.get("total_steps") not in (None, sum(steps)):
            raise ValueError(
                f"total_steps={data['total_steps']} but the rounds add up to {sum(steps)}: change a round's steps, or drop "
                f"total_steps; to train more rounds, append them (rounds.{len(steps)}={{steps: N}}: a resume may add rounds)"
            )
        return {**data, "total_steps": sum(steps)}

    @model_validator(mode="before")
    @classmethod
    def _scaled_copies(cls, data: Any) -> Any:
        """``scale`` sets ``env.num_envs`` to ``len(match) x scale`` (a num_envs other than the
        default 1 must agree)."""
        if not isinstance(data, dict) or data.get("scale") is None or not isinstance(data["scale"], int):
            return data
        env = data.get("env")
        if isinstance(env, Strict):
            env = env.model_dump()
        env = dict(env or {})
        copies = max(1, len(data.get("match") or [])) * data["scale"]
        if env.get("num_envs") not in (None, 1, copies):
            raise ValueError(f"scale={data['scale']} makes {copies} env copies but env.num_envs={env['num_envs']}: set one of them")
        return {**data, "env": {**env, "num_envs": copies}}

    @model_validator(mode="before")
    @classmethod
    def _tournament_matches(cls, data: Any) -> Any:
        """A tournament without ``match`` plays every ordered pairing of its policies (before
        ``_scaled_copies`` counts them: pydantic runs "before" validators last-defined first)."""
        if not isinstance(data, dict) or not isinstance(data.get("tournament"), dict) or data.get("match"):
            return data
        table = data["tournament"]
        if not isinstance(table.get("policies"), list) or not isinstance(table.get("groups"), list) or len(table["groups"]) != 2:
            return data  # the tournament's validation names what is wrong
        return {**data, "match": round_robin(table["policies"], table["groups"])}

    @model_validator(mode="before")
    @classmethod
    def _import_plugins(cls, data: Any) -> Any:
        """Imports ``plugins`` before anything else is read (the last "before" validator runs
        first), so that the names they register are valid config values; a plugin that is
        not a module's name, or does not import, is the only error said."""
        if not isinstance(data, dict) or data.get("plugins") is None:
            return data
        plugins = [data["plugins"]] if isinstance(data["plugins"], str) else data["plugins"]  # one module
        if not isinstance(plugins, list):
            raise ValueError(f"plugins: a list of module names, e.g. [my_algos], not {plugins!r}")
        for module in plugins:
            import_plugin(module)
        return {**data, "plugins": plugins}

    @field_validator("device")
    @classmethod
    def _device(cls, name: str) -> str:
        from relayrl.core.device import check_device

        check_device(name)
        return name

    @model_validator(mode="after")
    def _consistent(self) -> "RunConfig":
        """The checks across sections (``relayrl.experiment.checks``), in order."""
        from relayrl.experiment.checks import CHECKS

        for check in CHECKS:
            check(self)
        return self


    def algorithm_section(self) -> str:
        """The config section of the run's learners: the one of ``LEARNER_SECTIONS`` that is
        set, else ``dqn``."""
        return next((name for name in LEARNER_SECTIONS if getattr(self, name) is not None), "dqn")

    def algorithm(self) -> tuple[str, LearnerSection]:
        """The registered algorithm the run's learners train, with its config section."""
        section = getattr(self, self.algorithm_section())
        return section.algo, section

    def recipe(self, pid: str) -> tuple[str, LearnerSection, SharingConfig]:
        """What policy ``pid`` learns (or was trained) with: the registered algorithm, its
        config section and its sharing, each the run's changed by the policy's own keys. A
        policy that changes another learner section than the run's trains (or was trained
        with) that one instead: the run's section of that name, or its defaults, changed by
        the policy's keys (a SEAC team beside a frozen DQN opponent: ``dqn: {...}``)."""
        policy = self.policies.get(pid) or self.eval.policies.get(pid) or PolicyConfig()
        if policy.of is not None:  # a snapshot has the networks of the policy it copies
            return self.recipe(policy.of)
        own = [name for name in ("dqn", *LEARNER_SECTIONS) if getattr(policy, name)]
        if len(own) > 1:
            raise ValueError(f"policies.{pid} sets {' and '.join(own)}: a policy trains one algorithm, keep one of them")
        name = own[0] if own else self.algorithm_section()
        section = getattr(self, name) or SECTION_TYPES[name]()
        changes = getattr(policy, name)
        try:
            if changes:
                base = section.model_dump()
                if changes.get("algo", base.get("algo")) != base.get("algo"):
                    # another algorithm: the run's own settings carry over, its algorithm's defaults do not
                    defaults = type(section).model_validate({"algo": base["algo"]}).model_dump()
                    base = {key: value for key, value in base.items() if value != defaults[key]}
                section = type(section).model_validate({**base, **changes})
        except ValidationError as error:
            raise ValueError(nested_error(error, type(section), f"policies.{pid}.{name}")) from None
        try:
            sharing = SharingConfig.model_validate({**self.sharing.model_dump(), **policy.sharing}) if policy.sharing else self.sharing
        except ValidationError as error:
            raise ValueError(nested_error(error, SharingConfig, f"policies.{pid}.sharing")) from None
        return section.algo, section, sharing

    def model_of(self, pid: str) -> ModelConfig:
        """The Q-network sizes policy ``pid`` builds (a dqn policy's): the run's ``model``
        changed by the policy's own ``model`` keys (a frozen opponent trained with others)."""
        policy = self.policies.get(pid) or self.eval.policies.get(pid) or PolicyConfig()
        if policy.of is not None:  # a snapshot has the networks of the policy it copies
            return self.model_of(policy.of)
        if not policy.model:
            return self.model
        try:
            return ModelConfig.model_validate({**self.model.model_dump(), **policy.model})
        except ValidationError as error:
            raise ValueError(nested_error(error, ModelConfig, f"policies.{pid}.model")) from None

    def reads_state(self) -> bool:
        """Whether a policy of the run learns from, or acts on networks trained on, the env's
        global state (its algorithm's capabilities): the env computes ``state()`` only then."""
        kinds = {pid: p.kind for pid, p in {**self.policies, **self.eval.policies}.items()}
        ids = ["", *(pid for pid, kind in kinds.items() if kind in ("learning", "frozen", "snapshot"))]
        return any(ALGORITHMS[self.recipe(pid)[0]].capabilities.reads_state for pid in ids)

    def matches(self, groups: list[str], round_index: int | None = None) -> list[Match]:
        """The match list over an env of these groups (in round ``round_index``: its own, where
        it has one): the config's, else each group to the policy of its name."""
        if round_index is not None and self.rounds and self.rounds[round_index].match:
            return self.rounds[round_index].match
        return self.match or default_match(groups)

    def round_env(self, index: int) -> EnvSection:
        """The env section of round ``index``: the run's with the round's settings changed."""
        changes = self.rounds[index].env
        if not changes:
            return self.env
        return type(self.env).model_validate({**self.env.model_dump(), "settings": {**self.env.env_settings(), **changes}})

    def policy_configs(self, groups: list[str]) -> dict[str, PolicyConfig]:
        """Every policy the matches of the run and its rounds name, in order of appearance:
        declared ones, and for a group without a declared policy, a learning one named
        after it."""
        lists = [self.matches(groups)] + [r.match for r in self.rounds if r.match]
        return {pid: self.policies.get(pid, PolicyConfig()) for pid in match_policy_ids([m for matches in lists for m in matches])}

    def config_hash(self) -> str:
        """The short hash in the run directory's name (``relayrl.experiment.identity``)."""
        return config_hash(self)


# each learner section's config class, as RunConfig declares it (``X | None`` -> X)
SECTION_TYPES: dict[str, type[Any]] = {
    name: next(t for t in (*get_args(RunConfig.model_fields[name].annotation), RunConfig.model_fields[name].annotation) if isinstance(t, type) and t is not type(None))
    for name in ("dqn", *LEARNER_SECTIONS)
}


def build_config(data: "dict[str, Any] | RunConfig") -> RunConfig:
    """Validates a nested dict into a RunConfig, raising ConfigError with readable paths. A
    dict that names a registered preset must give every key: the keys it left out would take
    the defaults, not the preset's (``preset_dict`` gives them all). A RunConfig is validated
    again: ``model_copy(update=...)`` checks nothing, and a section given as a dict there
    would stand in for the preset's whole section."""
    if isinstance(data, dict):
        from relayrl.experiment.presets import refuse_partial_preset  # the presets are built by this module

        refuse_partial_preset(data)
    return validate_config(data)


def validate_config(data: "dict[str, Any] | RunConfig") -> RunConfig:
    """``build_config`` without the check that a dict naming a preset gives every key: for a
    preset's own overrides and for a run's saved config.yaml, which an older revision wrote
    without the keys added since (they take the defaults, as they did then)."""
    if isinstance(data, RunConfig):
        given = data.model_dump(mode="json", warnings=False)
        checked = validate_config(given)
        changed = [key for key, value in checked.model_dump(mode="json").items() if value != given[key]]
        if changed:
            raise ConfigError(
                f"the config's {', '.join(changed)} {'is' if len(changed) == 1 else 'are'} not what validation makes of "
                f"{'it' if len(changed) == 1 else 'them'} (model_copy(update=...) does not validate, and a section given there as a dict "
                "replaces the whole section): change a preset with build_config(apply_overrides(preset_dict(name), ['dqn.lr=0.001', ...]))"
            )
        return checked
    if not isinstance(data, dict):
        preset = ": a preset by name is load_preset(name)" if isinstance(data, str) else ""
        raise ConfigError(f"a config is a RunConfig or a dict of its keys (env, dqn, sharing, ...), not a {type(data).__name__}{preset}")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(format_error(error, RunConfig, ENV_TAGS, later_sections(data.get("env") if isinstance(data, dict) else None))) from None


def _sections_declared() -> None:
    """Every learner config section (``SECTIONS``) is a RunConfig and a PolicyConfig field
    (what a new section must add besides its registration)."""
    for name in ("dqn", *LEARNER_SECTIONS):
        missing = [model.__name__ for model in (RunConfig, PolicyConfig) if name not in model.model_fields]
        if missing:
            raise TypeError(f"algorithms register the config section {name!r}, which {' and '.join(missing)} "
                            f"{'does' if len(missing) == 1 else 'do'} not declare: add a field {name} there")


_sections_declared()
