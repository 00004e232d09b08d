"""Typed, validated run configuration (pydantic). A wrong key or value fails before training
starts with the key path, the bad value and what is allowed."""

import hashlib
import json
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from relayrl.algos import ALGORITHMS, Capabilities
from relayrl.algos.algorithm import algorithms_with
from relayrl.algos.actor_critic import ActorCriticConfig
from relayrl.algos.qmix import ValueDecompositionConfig
from relayrl.algos.dqn import DQNConfig
from relayrl.arena.match import Match, check_match_syntax, default_match, match_policy_ids
from relayrl.arena.policy import PolicyConfig
from relayrl.arena.round import HooksConfig, RoundConfig
from relayrl.arena.schemes.pbt import PBTConfig
from relayrl.arena.schemes.selfplay import SelfPlayConfig
from relayrl.arena.schemes.tournament import TournamentConfig, round_robin
from relayrl.core.errors import ConfigError
from relayrl.core.settings import Strict
from relayrl.envs.gym_copies import GymSection
from relayrl.envs.pursuit import PursuitSection, PursuitSettings
from relayrl.envs.registry import ENVS, MODULE_PATH, PettingZooSection
from relayrl.envs.section import EnvSection
from relayrl.nets.qnetwork import ModelConfig
from relayrl.sharing.config import SharingConfig
from relayrl.sharing.selectors import bandwidth_rules


def _env_kind(value: Any) -> str:
    """The union member of an env section: a built-in name's, else a module path's (PettingZoo)."""
    name = value.get("name", "pursuit") if isinstance(value, dict) else getattr(value, "name", "pursuit")
    return ENVS[name].section.__name__ if name in ENVS else PettingZooSection.__name__


def _named_env(value: Any) -> Any:
    """``env.name`` may be a Gymnasium id (``Pendulum-v1``): K copies of it, the ``gym`` env;
    any other name that is neither built in nor a module path is refused with the choices."""
    if not isinstance(value, dict) or value.get("name", "pursuit") in ENVS:
        return value
    name = value["name"]
    if isinstance(name, str) and re.match(MODULE_PATH, name):
        return value
    import gymnasium

    if isinstance(name, str) and name in gymnasium.registry:
        settings = {**value.get("settings", {}), "env_id": name}
        return {**value, "name": "gym", "settings": settings}
    raise ValueError(
        f"unknown env {name!r}: use a built-in ({', '.join(ENVS)}), a PettingZoo Parallel env's module "
        f"path (pettingzoo.sisl.multiwalker_v9, mpe2.simple_spread_v3) or a Gymnasium id (Pendulum-v1)"
    )


# Every built-in env's section (registered beside the env) and the section of a PettingZoo
# module path: the union is built when this module is imported, after ``relayrl.envs``
# registered the built-in envs.
ENV_SECTIONS: tuple[type[EnvSection], ...] = (*dict.fromkeys(ENVS[name].section for name in ENVS), PettingZooSection)
ENV_TAGS = tuple(section.__name__ for section in ENV_SECTIONS)
EnvConfig = Annotated[
    Union[tuple(Annotated[section, Tag(section.__name__)] for section in ENV_SECTIONS)],
    Discriminator(_env_kind),
    BeforeValidator(_named_env),
]


class EvalConfig(Strict):
    interval: int = Field(50_000, ge=0, description="env steps between greedy evaluations; 0 = off")
    episodes: int = Field(5, ge=1)
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


# Settings that do not change what is learned (up to float rounding across devices/threads).
RUNTIME_KEYS = {"seed", "total_steps", "torch_threads", "device", "checkpoint_interval", "keep_checkpoints"}
# What a resume may change: the budget and how the run executes (a seed names another run).
RESUMABLE_KEYS = tuple(sorted(RUNTIME_KEYS - {"seed"}))
# Sections added after runs existed: hashed only when set, so older run directories keep their hashes.
HASHED_WHEN_SET: dict[str, Any] = {
    "policies": {},
    "match": [],
    "scale": None,
    "report_group": None,
    "actor_critic": None,
    "qmix": None,
    "sharing.replay": "own",
    "sharing.correction": "none",
    "sharing.divergence": "sym_kl",
    "sharing.reference_cov": "sigma",
    "sharing.cov_regulariser": 1e-6,
    "sharing.jsd_samples": 256,
    "actor_critic.normalize_obs": False,
    "eval.policies": {},
    "eval.match": [],
    "qmix.storage": "episodes",
    "qmix.bootstrap": "own",
    "relay": None,
    "shared_replay": None,
    "backend.learners": "driver",
    "backend.learner_cpus": 1.0,
    "policies.*.qmix.storage": "episodes",
    "policies.*.qmix.bootstrap": "own",
    "policies.*.of": None,
    "policies.*.qmix": {},
    "rounds": [],
    "hooks": {"on_round_start": [], "on_round_end": []},
    "pbt": None,
    "pbt.perturb": ["lr"],
    "tournament": None,
    "selfplay": None,
    "backend": {"kind": "local", "runners": 1, "address": None, "runner_cpus": 1.0, "fragment_steps": None},
}


def _drop_default(section: Any, parts: list[str], default: Any) -> None:
    """Removes the key at ``parts`` (``*`` matches every key at its level) where it holds
    ``default``."""
    if not isinstance(section, dict) or not parts:
        return
    head, rest = parts[0], parts[1:]
    for key in list(section) if head == "*" else [head]:
        if not rest:
            if key in section and section[key] == default:
                del section[key]
        else:
            _drop_default(section.get(key), rest, default)


# Sections that replace ``dqn`` as the run's learner where they are set.
LEARNER_SECTIONS = ("actor_critic", "qmix")


class RunConfig(Strict):
    preset: str = "custom"
    total_steps: int = Field(800_000, ge=1)
    seed: int = Field(0, ge=0, lt=2**63, description="NumPy and torch seeds are non-negative")
    env: EnvConfig = PursuitSection()
    model: ModelConfig = ModelConfig()
    dqn: DQNConfig = DQNConfig()
    actor_critic: ActorCriticConfig | None = Field(None, description="continuous actions: the actor-critic learner (dqn is unused)")
    qmix: ValueDecompositionConfig | None = Field(None, description="value decomposition over each group's agents, on episodes (dqn is unused)")
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
            raise ValueError(f"total_steps={data['total_steps']} but the rounds add up to {sum(steps)}: change a round's steps, or drop total_steps")
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

    @field_validator("device")
    @classmethod
    def _device(cls, name: str) -> str:
        from relayrl.core.device import check_device

        check_device(name)
        return name

    @model_validator(mode="after")
    def _consistent(self) -> "RunConfig":
        if isinstance(self.env, GymSection) and self.actor_critic is None:
            raise ValueError("gym envs train the actor-critic learner: set actor_critic (e.g. the preset halfcheetah-td3)")
        actions = ALGORITHMS[self.algorithm()[0]].capabilities.actions
        if self.env.actions != "any" and self.env.actions not in actions:
            able = algorithms_with(lambda capabilities: self.env.actions in capabilities.actions)
            raise ValueError(f"{self.algorithm_section()} applies to {' and '.join(sorted(actions))} actions; {self.env.name} has "
                             f"{self.env.actions} actions ({', '.join(able)} act on them)")
        if self.qmix is not None and self.actor_critic is not None:
            raise ValueError("qmix and actor_critic are two learners: set one of them")
        limit = getattr(self.env.settings, "max_cycles", None)
        if self.qmix is not None and limit is not None and limit > self.qmix.max_episode_length:
            raise ValueError(f"qmix stores whole episodes of up to max_episode_length={self.qmix.max_episode_length} steps, but episodes of {self.env.name} last up to {limit}: raise qmix.max_episode_length")
        self._check_recipe("", *self.algorithm(), self.sharing)
        check_match_syntax(self.match)
        for i, r in enumerate(self.rounds):
            where = f"rounds[{i}]"
            if r.match is not None:
                try:
                    check_match_syntax(r.match)
                except ValueError as error:
                    raise ValueError(f"{where}.{error}") from None
            try:
                self.round_env(i)
            except ValidationError as error:
                raise ValueError(f"{where}.env: " + _format_error(error).removeprefix("invalid configuration:\n  ")) from None
        if self.backend.learners == "actors" and self.backend.kind != "ray":
            raise ValueError("backend.learners=actors puts the learners in Ray actors: set backend.kind=ray as well")
        if self.backend.kind == "ray":
            if self.backend.runners > self.env.num_envs:
                raise ValueError(f"backend.runners={self.backend.runners} but env.num_envs={self.env.num_envs}: each runner steps at least one env copy")
        if self.pbt is not None:
            if len(self.rounds) < 2:
                raise ValueError("pbt exploits and explores between rounds: give the run at least 2 rounds")
            strangers = [pid for pid in self.pbt.population if pid not in self.policies or not self.policies[pid].learns]
            if strangers:
                raise ValueError(f"pbt.population names {strangers}, which are not learning policies declared in policies")
            if "bandwidth" in self.pbt.perturb:
                silent = [pid for pid in self.pbt.population if not self.recipe(pid)[2].relays_by_bandwidth]
                if silent:
                    raise ValueError(
                        f"pbt.perturb has 'bandwidth' but {silent} relay no transitions by a bandwidth: "
                        f"give them a selection rule (sharing.select: {', '.join(bandwidth_rules())}) or drop 'bandwidth'"
                    )
        if self.relay is not None:
            strangers = [pid for pid in self.relay.between if pid not in self.policies or not self.policies[pid].learns]
            if strangers:
                raise ValueError(f"relay.between names {strangers}, which are not learning policies declared in policies")
            self._check_members("relay.between", self.relay.between, lambda capabilities: capabilities.relay_between)
            silent = [pid for pid in self.relay.between if not self.recipe(pid)[2].relays_by_bandwidth]
            if silent:
                raise ValueError(f"relay.between has {silent}, which select no transitions to relay: give them a selection rule "
                                 f"(sharing.select: {', '.join(bandwidth_rules())})")
        if self.shared_replay is not None:
            self._check_shared_replay(self.shared_replay.between)
        if self.tournament is not None:
            if not self.rounds:
                raise ValueError("a tournament rates its policies round by round: give the run rounds")
            strangers = [pid for pid in self.tournament.policies if pid not in self.policies]
            if strangers:
                raise ValueError(f"tournament.policies names {strangers}, which policies does not declare")
        clashes = sorted(set(self.eval.policies) & set(self.policies))
        if clashes:
            raise ValueError(f"eval.policies {clashes} are also run policies: give evaluation-only policies ids of their own")
        if self.eval.match:
            known = {*self.policies, *self.eval.policies, *(self.env.group_names() or [])}  # a group's own policy is its name
            unknown = [pid for pid in match_policy_ids(self.eval.match) if pid not in known]
            if unknown:
                raise ValueError(f"eval.match names policies {unknown} that neither policies nor eval.policies declares")
        for pid, policy in self.eval.policies.items():
            if policy.kind == "frozen":
                self._check_recipe(pid, *self.recipe(pid))
        snapshots = [pid for pid, p in self.policies.items() if p.kind == "snapshot"]
        if self.selfplay is not None:
            sp = self.selfplay
            if not self.rounds:
                raise ValueError("self-play draws an opponent snapshot per round: give the run rounds")
            if sp.learner not in self.policies or not self.policies[sp.learner].learns:
                raise ValueError(f"selfplay.learner {sp.learner!r} is not a learning policy declared in policies")
            opponent = self.policies.get(sp.opponent)
            if opponent is None or opponent.kind != "snapshot" or opponent.of != sp.learner:
                raise ValueError(f"selfplay.opponent {sp.opponent!r} must be declared as {{kind: snapshot, of: {sp.learner}}} in policies")
        strays = [pid for pid in snapshots if self.selfplay is None or pid != self.selfplay.opponent]
        if strays:
            raise ValueError(f"snapshot policies {strays} get their networks from a self-play scheme: name one as selfplay.opponent")
        lists = [m for m in (self.match, *(r.match for r in self.rounds)) if m]
        if lists:
            named = match_policy_ids([m for matches in lists for m in matches])
            undeclared = [pid for pid in named if pid not in self.policies]
            if undeclared:
                raise ValueError(f"match names policies {undeclared} that policies does not declare (declared: {sorted(self.policies)})")
            unused = [pid for pid in self.policies if pid not in named]
            if unused:
                raise ValueError(f"policies {unused} drive no entity: give them slots in match, or remove them")
            for matches in lists:
                if self.env.num_envs % len(matches):
                    raise ValueError(f"env.num_envs={self.env.num_envs} copies cannot repeat the {len(matches)} matches evenly: set scale instead")
        for pid, policy in self.policies.items():
            if policy.kind in ("learning", "frozen"):
                self._check_recipe(pid, *self.recipe(pid))
            if policy.of is not None and (policy.of not in self.policies or not self.policies[policy.of].learns):
                raise ValueError(f"policies.{pid}.of names {policy.of!r}, which is not a learning policy declared in policies")
        names = self.env.group_names()
        if names is None:  # a user's env: its groups are checked once it is built
            return self
        if not self.match:
            strays = sorted(set(self.policies) - set(names))
            if strays:
                raise ValueError(
                    f"policies {strays} are not groups of {self.env.name} (its groups: {names}): without a match each "
                    f"policy drives the group of its name; place the others with match"
                )
        if self.report_group is not None and self.report_group not in names:
            raise ValueError(f"report_group {self.report_group!r} is not a team of {self.env.name}; its teams: {names}")
        if not any(p.learns for p in self.policy_configs(names).values()):
            raise ValueError("no policy learns (all are frozen, random or scripted): make one kind=learning")
        if self.sharing.team is not None and isinstance(self.env.settings, PursuitSettings):
            n_agents = self.env.settings.n_pursuers
            if any(not 0 <= i < n_agents for i in self.sharing.team):
                raise ValueError(f"sharing.team indices must be in [0, {n_agents}), got {self.sharing.team}")
        return self

    def _check_members(self, key: str, between: list[str], applies: Callable[[Capabilities], bool]) -> None:
        """The relay and the shared replay move single transitions between per-agent learners:
        only learners whose algorithm's capabilities include ``key`` take part."""
        algos = {pid: self.recipe(pid)[0] for pid in between}
        refused = {pid: algo for pid, algo in algos.items() if not applies(ALGORITHMS[algo].capabilities)}
        if refused:
            raise ValueError(f"{key} has {refused}, whose algorithms take no part in it: {key} joins learners of "
                             f"{', '.join(algorithms_with(applies))}, whose agents keep transitions of their own: drop these policies from it")

    def _check_shared_replay(self, between: list[str]) -> None:
        """The policies of ``shared_replay.between`` learn from a shared replay of one capacity."""
        strangers = [pid for pid in between if pid not in self.policies or not self.policies[pid].learns]
        if strangers:
            raise ValueError(f"shared_replay.between names {strangers}, which are not learning policies declared in policies")
        if len(set(between)) < len(between):
            raise ValueError(f"shared_replay.between names a policy twice: {between}")
        self._check_members("shared_replay.between", between, lambda capabilities: capabilities.shared_replay_between)
        recipes = {pid: self.recipe(pid) for pid in between}
        own = [pid for pid, (_, _, sharing) in recipes.items() if sharing.replay != "shared"]
        if own:
            raise ValueError(f"shared_replay.between has {own}, which keep replays of their own: give them sharing.replay=shared "
                             "(with correction dps for DASE, none for ES-DASE)")
        sizes = {pid: section.off_policy().buffer_size for pid, (_, section, _) in recipes.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"shared_replay.between: the learners' buffer_size differ ({sizes}); the one replay has one capacity")
        if self.rounds:
            raise ValueError("shared_replay.between runs without rounds: its learners keep their places in the one replay for the whole run")

    def _check_recipe(self, pid: str, algo: str, section: Any, sharing: SharingConfig) -> None:
        """Settings a learner cannot combine (checked for the run's and each policy's recipe)."""
        where = "" if pid == "" else f"policy {pid!r}: "
        settings, capabilities = section.off_policy(), ALGORITHMS[algo].capabilities
        if sharing.select != "none" and not capabilities.select:
            selecting = ", ".join(algorithms_with(lambda c: c.select))
            raise ValueError(f"{where}sharing.select={sharing.select} applies to {selecting} learners, not {algo}: set sharing.select=none")
        if not capabilities.shared_replay and (sharing.replay == "shared" or sharing.correction != "none"):
            sharing_replay = ", ".join(algorithms_with(lambda c: c.shared_replay))
            raise ValueError(
                f"{where}sharing.replay=shared and correction=dps apply to actor-critic learners ({sharing_replay}), not {algo}: DQN "
                "targets do not depend on the behaviour policy, and DPS needs deterministic continuous actions (docs/results/dase/README.md)"
            )
        if settings.param_sharing and not capabilities.param_sharing:
            raise ValueError(f"{where}{algo} keeps a parameter set per agent: set {self.algorithm_section()}.param_sharing=false")
        if sharing.priority == "sender_td" and not settings.prioritized:
            raise ValueError(f"{where}sharing.priority=sender_td sets priorities in a prioritized replay: use priority=max here")
        if settings.param_sharing and sharing.select != "none":
            raise ValueError(f"{where}parameter sharing has one replay: set sharing.select=none")

    def algorithm_section(self) -> str:
        """The config section of the run's learners: ``actor_critic`` or ``qmix`` where set,
        else ``dqn``."""
        return next((name for name in LEARNER_SECTIONS if getattr(self, name) is not None), "dqn")

    def algorithm(self) -> tuple[str, DQNConfig | ActorCriticConfig | ValueDecompositionConfig]:
        """The registered algorithm the run's learners train, with its config section."""
        section = getattr(self, self.algorithm_section())
        return getattr(section, "algo", "dqn"), section

    def recipe(self, pid: str) -> tuple[str, DQNConfig | ActorCriticConfig | ValueDecompositionConfig, SharingConfig]:
        """What policy ``pid`` learns (or was trained) with: the registered algorithm, its
        config section and its sharing, each the run's changed by the policy's own keys."""
        algo, section = self.algorithm()
        policy = self.policies.get(pid) or self.eval.policies.get(pid) or PolicyConfig()
        if policy.of is not None:  # a snapshot has the networks of the policy it copies
            return self.recipe(policy.of)
        changes = getattr(policy, self.algorithm_section())
        try:
            if changes:
                section = type(section).model_validate({**section.model_dump(), **changes})
            sharing = SharingConfig.model_validate({**self.sharing.model_dump(), **policy.sharing}) if policy.sharing else self.sharing
        except ValidationError as error:
            raise ValueError(f"policies.{pid}: " + _format_error(error).removeprefix("invalid configuration:\n  ")) from None
        return getattr(section, "algo", "dqn"), section, sharing

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
        """Short hash of everything that changes the experiment: not the seed, the budget, or
        how it is executed (threads, device, checkpointing), so those may change on resume."""
        payload = self.model_dump(mode="json", exclude=RUNTIME_KEYS)
        for key, default in HASHED_WHEN_SET.items():
            _drop_default(payload, key.split("."), default)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:8]


def config_changes(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Dotted keys whose values differ between two config dumps, with (before, after). Keys
    present in one dump only (sections added in a later relayrl) are not changes."""
    changes: dict[str, tuple[Any, Any]] = {}
    for key in before.keys() & after.keys():
        old, new = before[key], after[key]
        if isinstance(old, dict) and isinstance(new, dict):
            changes.update(config_changes(old, new, f"{prefix}{key}."))
        elif old != new:
            changes[f"{prefix}{key}"] = (old, new)
    return changes


def _same_env(a: str, b: str) -> bool:
    """Names of one env section are implementations of the same dynamics (``pursuit`` and
    ``pursuit-pz``): a run may continue on the other one."""
    return a in ENVS and b in ENVS and ENVS[a].section is ENVS[b].section


def check_resumable(saved: dict[str, Any], config: "RunConfig", source: str) -> dict[str, tuple[Any, Any]]:
    """The changes from ``saved`` (a run's recorded config) to ``config`` if a resume may make
    them; else ConfigError listing the changes and the keys a resume may change."""
    changes = config_changes(saved, config.model_dump(mode="json"))
    refused = {k: v for k, v in changes.items() if k not in RESUMABLE_KEYS and not (k == "env.name" and _same_env(*v))}
    if refused:
        shown = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(refused.items()))
        raise ConfigError(
            f"{source} was trained with other settings ({shown}). A resume may change only "
            f"{', '.join(RESUMABLE_KEYS)}; to train with new settings start a new run "
            f"(relayrl train {config.preset} KEY=VALUE ... makes its own run directory)"
        )
    return changes


def _allowed_keys(parts: list[str]) -> list[str]:
    """Field names of the config section at ``parts`` (for unknown-key messages)."""
    model: Any = RunConfig
    for part in parts:
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        options = [a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")]
        if not options:
            return []
        model = options[0]
    return sorted(model.model_fields)


def _format_error(error: ValidationError) -> str:
    lines = ["invalid configuration:"]
    for item in error.errors():
        parts = [str(p) for p in item["loc"] if not str(p).startswith("function-after")]
        # discriminated unions insert the tag ("pursuit") into the location: drop it
        parts = [p for i, p in enumerate(parts) if not (i > 0 and parts[i - 1] == "env" and p in ENV_TAGS)]
        path = ".".join(parts) or "(root)"
        message = item["msg"].removeprefix("Value error, ")
        value = item.get("input")
        shown = "" if isinstance(value, dict) else f" (got {value!r})"
        hint = ""
        if item["type"] == "extra_forbidden":
            allowed = _allowed_keys(parts[:-1])
            hint = f" -- unknown key; allowed here: {', '.join(allowed)}" if allowed else " -- unknown key"
        lines.append(f"  {path}: {message}{shown}{hint}")
    return "\n".join(lines)


def build_config(data: dict[str, Any]) -> RunConfig:
    """Validates a nested dict into a RunConfig, raising ConfigError with readable paths."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_format_error(error)) from None


def _parse_value(text: str) -> Any:
    """Command-line values are numbers or YAML values: 1e-4, 250000, true, [0, 1], null."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Applies ``dotted.key=value`` overrides to a nested dict (a copy); ``total_steps=N``
    sets the budget. Unknown keys are caught by validation afterwards."""
    result = json.loads(json.dumps(data))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value (e.g. dqn.lr=1e-4)")
        key, text = item.split("=", 1)
        try:
            value = _parse_value(text)
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or "not a number or YAML value"
            raise ConfigError(f"override {item!r}: the value cannot be read ({problem}); e.g. 1e-4, true, [64, 256]") from None
        node = result
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {key!r}: {part!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return result
