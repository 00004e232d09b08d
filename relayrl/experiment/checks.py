"""The checks across a run config's sections, run in order once its sections are valid
(``RunConfig._consistent``): each names the key at fault and how to fix it, before
training starts."""

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from relayrl.algos import ALGORITHMS, Capabilities
from relayrl.algos.algorithm import algorithms_with
from relayrl.arena.match import check_match_syntax, match_policy_ids
from relayrl.envs.gym_copies import GymSection
from relayrl.envs.pursuit import PursuitSettings
from relayrl.experiment.config import LEARNER_SECTIONS, RunConfig
from relayrl.experiment.config_errors import format_error
from relayrl.sharing.config import SharingConfig
from relayrl.sharing.selectors import bandwidth_rules


def check_learner(config: RunConfig) -> None:
    """The run's learner is one section, applies to the env's actions, its episodes fit."""
    chosen = [name for name in LEARNER_SECTIONS if getattr(config, name) is not None]
    if len(chosen) > 1:
        raise ValueError(f"{' and '.join(chosen)} are {len(chosen)} learners: set one of them")
    actions, kind = ALGORITHMS[config.algorithm()[0]].capabilities.actions, config.env.action_kind()
    if kind != "any" and kind not in actions:
        able = algorithms_with(lambda capabilities: kind in capabilities.actions)
        name = config.env.settings.env_id if isinstance(config.env, GymSection) else config.env.name
        raise ValueError(f"{config.algorithm()[0]} applies to {' and '.join(sorted(actions))} actions; {name} has "
                         f"{kind} actions ({', '.join(able)} act on them: train one of them)")
    settings = config.env.env_settings()
    limit = settings.get("max_cycles") if isinstance(settings.get("max_cycles"), int) else None  # the episode limit, where the env declares one
    if config.qmix is not None and limit is not None and limit > config.qmix.max_episode_length:
        raise ValueError(f"qmix stores whole episodes of up to qmix.max_episode_length={config.qmix.max_episode_length} steps, but episodes of "
                         f"{config.env.name} last up to its max_cycles={limit}: set qmix.max_episode_length={limit} or more")
    check_recipe(config, "", *config.algorithm(), config.sharing)


def check_rounds(config: RunConfig) -> None:
    """Match lists are well formed, and each round's env settings are valid."""
    check_match_syntax(config.match)
    for i, r in enumerate(config.rounds):
        where = f"rounds[{i}]"
        if r.match is not None:
            try:
                check_match_syntax(r.match)
            except ValueError as error:
                raise ValueError(f"{where}.{error}") from None
        try:
            config.round_env(i)
        except ValidationError as error:
            lines = format_error(error, type(config.env)).removeprefix("invalid configuration:\n  ").split("\n  ")
            # a round's env keys are the settings' own (rounds[i].env.size)
            raise ValueError("\n  ".join(f"{where}.env.{line.removeprefix('settings.')}" for line in lines)) from None


def check_backend(config: RunConfig) -> None:
    """Learner actors need Ray; each runner steps at least one env copy."""
    if config.backend.learners == "actors" and config.backend.kind != "ray":
        raise ValueError("backend.learners=actors puts the learners in Ray actors: set backend.kind=ray as well")
    if config.backend.kind == "ray":
        runners, copies = config.backend.runners, config.env.num_envs
        if runners > copies:
            fix = (
                "a gym env steps its K copies (env.settings.n_agents) as one env, so it takes one runner: set backend.runners=1"
                if config.env.name == "gym"
                else f"set env.num_envs={runners} or more, or backend.runners={copies} or fewer"
            )
            raise ValueError(f"backend.runners={runners} but env.num_envs={copies}: each runner steps at least one env copy; {fix}")


def check_pbt(config: RunConfig) -> None:
    """Population-based training needs rounds and learning members (that relay, to perturb the bandwidth)."""
    if config.pbt is not None:
        if len(config.rounds) < 2:
            raise ValueError("pbt exploits and explores between rounds: give the run at least 2 rounds")
        strangers = [pid for pid in config.pbt.population if pid not in config.policies or not config.policies[pid].learns]
        if strangers:
            raise ValueError(f"pbt.population names {strangers}, which are not learning policies declared in policies")
        recipes = {pid: config.recipe(pid)[0] for pid in config.pbt.population}
        if len(set(recipes.values())) > 1:
            raise ValueError(f"pbt.population mixes algorithms ({', '.join(f'{pid}: {algo}' for pid, algo in recipes.items())}): a member takes the "
                             "best one's networks and optimiser state, so every member trains one algorithm")
        if "exploration" in config.pbt.perturb:
            fixed = [pid for pid, algo in recipes.items() if not ALGORITHMS[algo].capabilities.scaled_exploration]
            if fixed:
                scaled = ", ".join(algorithms_with(lambda c: c.scaled_exploration))
                raise ValueError(f"pbt.perturb has 'exploration' but {fixed} explore by their own policies' noise or sampling, which no scale "
                                 f"changes (the exploration scale multiplies the epsilon schedule of {scaled}): drop 'exploration'")
        if "bandwidth" in config.pbt.perturb:
            silent = [pid for pid in config.pbt.population if not config.recipe(pid)[2].relays_by_bandwidth]
            if silent:
                raise ValueError(
                    f"pbt.perturb has 'bandwidth' but {silent} relay no transitions by a bandwidth: "
                    f"give them a selection rule (sharing.select: {', '.join(bandwidth_rules())}) or drop 'bandwidth'"
                )


def check_exchanges(config: RunConfig) -> None:
    """The relay and the shared replay between learners join learning policies able to take part."""
    if config.relay is not None:
        strangers = [pid for pid in config.relay.between if pid not in config.policies or not config.policies[pid].learns]
        if strangers:
            raise ValueError(f"relay.between names {strangers}, which are not learning policies declared in policies")
        _check_members(config, "relay.between", config.relay.between, lambda capabilities: capabilities.relay_between)
        silent = [pid for pid in config.relay.between if not config.recipe(pid)[2].relays_by_bandwidth]
        if silent:
            raise ValueError(f"relay.between has {silent}, which select no transitions to relay: give them a selection rule "
                             f"(sharing.select: {', '.join(bandwidth_rules())})")
        joint = {pid: ALGORITHMS[config.recipe(pid)[0]].capabilities.centralised for pid in config.relay.between}
        if len(set(joint.values())) > 1:
            raise ValueError(f"relay.between mixes teams of centralised critics {[p for p, c in joint.items() if c]}, which relay joint "
                             f"steps of their group, with per-agent learners {[p for p, c in joint.items() if not c]}: relay between one kind")
    relaying = config.relay.between if config.relay is not None else []
    for pid in ([pid for pid, policy in config.policies.items() if policy.learns] or [""]):
        algo, _, sharing = config.recipe(pid)
        if ALGORITHMS[algo].capabilities.centralised and sharing.select != "none" and pid not in relaying:
            who = f"policy {pid!r}" if pid else "the run's team"
            raise ValueError(f"{who} trains centralised critics: its agents already learn from one replay of joint steps, and "
                             f"sharing.select={sharing.select} picks joint steps for other teams only: name it in relay.between "
                             "with another team of the same task, or set sharing.select=none")
    if config.shared_replay is not None:
        _check_shared_replay(config, config.shared_replay.between)


def check_tournament(config: RunConfig) -> None:
    """A tournament rates declared policies round by round."""
    if config.tournament is not None:
        if not config.rounds:
            raise ValueError("a tournament rates its policies round by round: give the run rounds")
        strangers = [pid for pid in config.tournament.policies if pid not in config.policies]
        if strangers:
            raise ValueError(f"tournament.policies names {strangers}, which policies does not declare")


def check_evaluation(config: RunConfig) -> None:
    """Evaluation-only policies have ids of their own and the matches evaluations play name known policies."""
    clashes = sorted(set(config.eval.policies) & set(config.policies))
    if clashes:
        raise ValueError(f"eval.policies {clashes} are also run policies: give evaluation-only policies ids of their own")
    if config.eval.match:
        known = {*config.policies, *config.eval.policies, *(config.env.group_names() or [])}  # a group's own policy is its name
        unknown = [pid for pid in match_policy_ids(config.eval.match) if pid not in known]
        if unknown:
            raise ValueError(f"eval.match names policies {unknown} that neither policies nor eval.policies declares")
    for pid, policy in config.eval.policies.items():
        if policy.kind == "frozen":
            check_recipe(config, pid, *config.recipe(pid))
        check_model(config, pid, policy)


def check_selfplay(config: RunConfig) -> None:
    """Self-play's learner learns and its opponent is a snapshot of it; every snapshot belongs to it."""
    snapshots = [pid for pid, p in config.policies.items() if p.kind == "snapshot"]
    if config.selfplay is not None:
        sp = config.selfplay
        if not config.rounds:
            raise ValueError("self-play draws an opponent snapshot per round: give the run rounds")
        if sp.learner not in config.policies or not config.policies[sp.learner].learns:
            raise ValueError(f"selfplay.learner {sp.learner!r} is not a learning policy declared in policies")
        opponent = config.policies.get(sp.opponent)
        if opponent is None or opponent.kind != "snapshot" or opponent.of != sp.learner:
            raise ValueError(f"selfplay.opponent {sp.opponent!r} must be declared as {{kind: snapshot, of: {sp.learner}}} in policies")
    strays = [pid for pid in snapshots if config.selfplay is None or pid != config.selfplay.opponent]
    if strays:
        raise ValueError(f"snapshot policies {strays} get their networks from a self-play scheme: name one as selfplay.opponent")


def check_policies(config: RunConfig) -> None:
    """Matches name declared policies, which all drive entities; every learning or frozen policy's recipe is valid."""
    lists = [m for m in (config.match, *(r.match for r in config.rounds)) if m]
    if lists:
        named = match_policy_ids([m for matches in lists for m in matches])
        undeclared = [pid for pid in named if pid not in config.policies]
        if undeclared:
            raise ValueError(f"match names policies {undeclared} that policies does not declare (declared: {sorted(config.policies)})")
        unused = [pid for pid in config.policies if pid not in named]
        if unused:
            raise ValueError(f"policies {unused} drive no entity: give them slots in match, or remove them")
        for matches in lists:
            if config.env.num_envs % len(matches):
                n = len(matches)
                raise ValueError(f"each env copy plays one match, so env.num_envs={config.env.num_envs} copies cannot repeat the {n} matches evenly: "
                                 f"set scale (env.num_envs = {n} x scale; scale: 1 plays each match once) or a multiple of {n} as env.num_envs")
    for pid, policy in config.policies.items():
        if policy.kind in ("learning", "frozen"):
            check_recipe(config, pid, *config.recipe(pid))
        check_model(config, pid, policy)
        if policy.of is not None and (policy.of not in config.policies or not config.policies[policy.of].learns):
            raise ValueError(f"policies.{pid}.of names {policy.of!r}, which is not a learning policy declared in policies")


def check_groups(config: RunConfig) -> None:
    """Against a built-in env's groups: policies without a match are groups, the reported team exists, some policy learns."""
    names = config.env.group_names()
    if names is None:  # a user's env: its groups are checked once it is built
        return
    if not config.match:
        strays = sorted(set(config.policies) - set(names))
        if strays:
            raise ValueError(
                f"policies {strays} are not groups of {config.env.name} (its groups: {names}): without a match each "
                f"policy drives the group of its name; place the others with match"
            )
    if config.report_group is not None and config.report_group not in names:
        raise ValueError(f"report_group {config.report_group!r} is not a team of {config.env.name}; its teams: {names}")
    if not any(p.learns for p in config.policy_configs(names).values()):
        raise ValueError("no policy learns (all are frozen, random or scripted): make one kind=learning")
    if config.sharing.team is not None and isinstance(config.env.settings, PursuitSettings):
        n_agents = config.env.settings.n_pursuers
        if any(not 0 <= i < n_agents for i in config.sharing.team):
            raise ValueError(f"sharing.team indices must be in [0, {n_agents}), got {config.sharing.team}")


def _check_members(config: RunConfig, key: str, between: list[str], applies: Callable[[Capabilities], bool]) -> None:
    """The relay and the shared replay move single transitions between per-agent learners:
    only learners whose algorithm's capabilities include ``key`` take part."""
    algos = {pid: config.recipe(pid)[0] for pid in between}
    refused = {pid: algo for pid, algo in algos.items() if not applies(ALGORITHMS[algo].capabilities)}
    if refused:
        raise ValueError(f"{key} has {refused}, whose algorithms take no part in it: {key} joins learners of "
                         f"{', '.join(algorithms_with(applies))}, whose agents keep transitions of their own: drop these policies from it")


def _check_shared_replay(config: RunConfig, between: list[str]) -> None:
    """The policies of ``shared_replay.between`` learn from a shared replay of one capacity."""
    strangers = [pid for pid in between if pid not in config.policies or not config.policies[pid].learns]
    if strangers:
        raise ValueError(f"shared_replay.between names {strangers}, which are not learning policies declared in policies")
    if len(set(between)) < len(between):
        raise ValueError(f"shared_replay.between names a policy twice: {between}")
    _check_members(config, "shared_replay.between", between, lambda capabilities: capabilities.shared_replay_between)
    recipes = {pid: config.recipe(pid) for pid in between}
    own = [pid for pid, (_, _, sharing) in recipes.items() if sharing.replay != "shared"]
    if own:
        raise ValueError(f"shared_replay.between has {own}, which keep replays of their own: give them sharing.replay=shared "
                         "(with correction dps for DASE, none for ES-DASE)")
    sizes = {pid: section.learner_params().buffer_size for pid, (_, section, _) in recipes.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"shared_replay.between: the learners' buffer_size differ ({sizes}); the one replay has one capacity")
    if config.rounds:
        raise ValueError("shared_replay.between runs without rounds: its learners keep their places in the one replay for the whole run")


def check_model(config: RunConfig, pid: str, policy: Any) -> None:
    """A policy's ``model`` keys are valid and size a network its algorithm builds (dqn's)."""
    if not policy.model:
        return
    config.model_of(pid)
    if policy.kind not in ("learning", "frozen"):
        raise ValueError(f"policies.{pid}.model sizes the networks of a learning or frozen dqn policy, not of a {policy.kind} one: remove it")
    algo = config.recipe(pid)[0]
    section = ALGORITHMS[algo].section
    if section != "dqn":
        raise ValueError(f"policies.{pid}.model sizes the Q-network dqn builds; {algo} builds its networks from its {section} section: "
                         f"set the sizes there (policies.{pid}.{section}: {{hidden: [...]}})")


def check_recipe(config: RunConfig, pid: str, algo: str, section: Any, sharing: SharingConfig) -> None:
    """Settings a learner cannot combine (checked for the run's and each policy's recipe)."""
    where = "" if pid == "" else f"policy {pid!r}: "
    settings, capabilities = section.learner_params(), ALGORITHMS[algo].capabilities
    if sharing.select != "none" and not capabilities.select:
        selecting = ", ".join(algorithms_with(lambda c: c.select))
        raise ValueError(f"{where}sharing.select={sharing.select} applies to {selecting} learners, not {algo}: set sharing.select=none")
    if not capabilities.shared_replay and (sharing.replay == "shared" or sharing.correction != "none"):
        sharing_replay = ", ".join(algorithms_with(lambda c: c.shared_replay))
        why = ("a policy-gradient learner learns from its own rollouts, not from a replay" if capabilities.on_policy else
               "its targets do not depend on the behaviour policy, and DPS needs deterministic continuous actions (docs/results/dase/README.md)")
        raise ValueError(f"{where}sharing.replay=shared and correction=dps apply to actor-critic learners ({sharing_replay}), not {algo}: {why}")
    if settings.param_sharing and not capabilities.param_sharing:
        raise ValueError(f"{where}{algo} keeps a parameter set per agent: set {config.algorithm_section()}.param_sharing=false")
    if capabilities.on_policy and capabilities.select and sharing.select == "none":
        raise ValueError(
            f"{where}{algo} learns from the steps its agents share: set sharing.select=all (as published) or quantile, gaussian or "
            "stochastic with sharing.bandwidth (the steps of largest |advantage|); a2c is the same learner without sharing"
        )
    if sharing.priority == "sender_td" and (capabilities.on_policy or not settings.prioritized):
        raise ValueError(f"{where}sharing.priority=sender_td sets priorities in a prioritized replay: use priority=max here")
    if settings.param_sharing and sharing.select != "none" and not capabilities.centralised:
        raise ValueError(f"{where}parameter sharing has one replay: set sharing.select=none")


CHECKS = (check_learner, check_rounds, check_backend, check_pbt, check_exchanges, check_tournament, check_evaluation, check_selfplay, check_policies, check_groups)
