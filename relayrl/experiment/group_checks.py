"""The checks of a run that need its envs' groups (their spaces and agents), made by
``relayrl.experiment.build`` before anything is built: sides that share see and act alike,
team episodes and minibatches fit, settings apply to the groups' actions, the replays fit in
memory; and the note of joint critics that read only their own group."""

from collections.abc import Sequence
from dataclasses import replace

from relayrl.algos.off_policy import learner_plan
from relayrl.algos.sections import OnPolicyConfig, ValueDecompositionConfig
from relayrl.arena.collect import Venue
from relayrl.arena.match import compile_matches
from relayrl.arena.policy_config import PolicyConfig
from relayrl.core.errors import ConfigError
from relayrl.core.resources import available_memory, human_bytes, physical_memory
from relayrl.core.specs import GroupSpec
from relayrl.experiment.config import SECTION_TYPES, RunConfig
from relayrl.replay import ReplayPlan, row_nbytes


def check_alike_sides(config: RunConfig, groups: Sequence[GroupSpec]) -> None:
    """A tournament's policies play both of its groups in turn, and self-play's opponent is a
    snapshot of its learner: each scheme's two groups must be alike."""
    by_name = {g.name: g for g in groups}
    for key, scheme, why in (
        ("tournament", config.tournament, "each policy of a tournament plays both sides in turn"),
        ("selfplay", config.selfplay, "self-play's opponent is a snapshot of its learner, playing the other side"),
    ):
        if scheme is None:
            continue
        unknown = [name for name in scheme.groups if name not in by_name]
        if unknown:
            raise ConfigError(f"{key}.groups names {unknown}; this environment's groups are {list(by_name)}")
        sides = [by_name[name] for name in scheme.groups]
        (na, oa, aa), (nb, ob, ab) = looks = [(g.n_agents, g.obs_shape, g.n_actions or g.action_shape) for g in sides]
        if looks[0] != looks[1]:
            raise ConfigError(
                f"{key}.groups {sides[0].name!r} and {sides[1].name!r} are not alike ({na} entit{'y' if na == 1 else 'ies'}, observations {oa}, {aa} actions "
                f"against {nb}, {ob}, {ab}): {why}, so the two groups need the same entities and spaces (as red and blue in battle); "
                "for unlike sides, write the matches yourself (match: [...] in rounds)"
            )


def check_team_episodes(config: RunConfig, first: Venue, configs: dict[str, PolicyConfig]) -> None:
    """Refuses a learner of whole team episodes (QMIX's family) where each agent runs its own
    episodes (K copies of a Gymnasium env): no episode of the team would ever end."""
    if not first.venv.independent_episodes:
        return
    episodic = [pid for pid, policy in configs.items() if policy.learns and isinstance(config.recipe(pid)[1], ValueDecompositionConfig)]
    if episodic:
        raise ConfigError(
            f"{', '.join(map(repr, episodic))}: qmix and its family learn from whole episodes of a team, and K copies of a Gymnasium env "
            "run each agent's own episodes (each copy ends and restarts apart), so no team episode would ever end and nothing would be "
            "learnt: train dqn (each agent learns from its own steps), or a multi-agent env"
        )


def check_minibatches(config: RunConfig, first: Venue, configs: dict[str, PolicyConfig]) -> None:
    """Refuses more minibatches per pass than an on-policy learner's rollout holds units to
    cut them from: its steps (a recurrent net's chunks) of every agent it drives, or its
    whole env steps with ``minibatch_unit=env_step`` or a parameter set per agent."""
    names = [g.name for g in first.venv.groups]
    for pid, assignment in compile_matches(config.matches(names, 0), first.venv.groups, first.venv.num_envs).items():
        if pid not in configs or not configs[pid].learns:
            continue
        section = config.recipe(pid)[1]
        if not isinstance(section, OnPolicyConfig) or section.minibatches == 1:
            continue
        steps = section.rollout_length // section.chunk_length if section.recurrent else section.rollout_length
        agents = assignment.spec.n_agents if section.param_sharing and section.minibatch_unit == "agent" else 1
        units = steps * assignment.n_workers * agents
        if section.minibatches > units:
            what = "chunks of on_policy.chunk_length steps" if section.recurrent else "steps"
            count = f"{steps} per env copy x {assignment.n_workers} copies" + (f" x {agents} agents" if agents > 1 else "")
            raise ConfigError(
                f"policy {pid!r}: on_policy.minibatches={section.minibatches} is more than its rollout holds to cut them from: "
                f"{units} {what} ({count}); set on_policy.minibatches to at most {units}, or lengthen on_policy.rollout_length, "
                "or add env copies (env.num_envs)"
            )


# settings that only one kind of action reads: (Box actions, discrete ones)
BOX_ONLY = ("log_std_init", "action_bounds")
DISCRETE_ONLY = ("gumbel_temperature", "logits_penalty")


def check_action_settings(config: RunConfig, specs: dict[str, GroupSpec], configs: dict[str, PolicyConfig]) -> None:
    """Refuses a learner's setting that its group's actions make it ignore (a Box policy's
    log std on discrete actions, the Gumbel-softmax's temperature on Box ones), and the
    agents' index without parameter sharing, so that no setting silently does nothing."""
    for pid, spec in specs.items():
        if pid not in configs or not configs[pid].learns:
            continue
        section = config.recipe(pid)[1]
        name = next(n for n, kind in SECTION_TYPES.items() if isinstance(section, kind))
        fields = type(section).model_fields
        for key in DISCRETE_ONLY if spec.continuous else BOX_ONLY:
            if key in fields and getattr(section, key) != fields[key].default:
                has, reads = ("Box", "discrete") if spec.continuous else ("discrete", "Box")
                raise ConfigError(f"policy {pid!r}: {name}.{key} is read for {reads} actions only, and group {spec.name!r} has {has} actions: remove {key}")
        if "agent_id" in fields and not section.agent_id and not getattr(section, "param_sharing", True):
            raise ConfigError(f"policy {pid!r}: {name}.agent_id=false takes the agents' index out of a shared network's inputs, and "
                              "param_sharing=false gives each agent a network of its own: remove agent_id")


def check_memory(config: RunConfig, specs: dict[str, GroupSpec], configs: dict[str, PolicyConfig], verbose: bool) -> None:
    """Prints what the learning policies' replays will take in memory and in each
    checkpoint, and refuses a run whose replays do not fit in the memory available now
    (before allocating)."""
    plans: dict[str, ReplayPlan] = {}
    shared = config.shared_replay.between if config.shared_replay is not None else []
    for pid, spec in specs.items():
        if configs[pid].learns and pid not in shared[1:]:  # the learners of a shared replay allocate one
            algo, section, sharing = config.recipe(pid)
            plans["shared replay" if pid in shared else pid] = learner_plan(spec, algo, section, sharing)
    total = sum(p.nbytes() for p in plans.values())
    parts = [f"{n}: {p.n_buffers} x {p.capacity:,} x {row_nbytes(p.fields):,} B" for n, p in plans.items()]
    if verbose:
        per_checkpoint = sum(p.checkpoint_nbytes() for p in plans.values())
        print(f"replay memory {human_bytes(total)} ({'; '.join(parts)}); a checkpoint holds the filled rows "
              f"(up to {human_bytes(per_checkpoint)}) and the networks with their optimiser state")
    # No buffer gets more rows than every entity's transitions (or one episode per env step)
    # of the run's budget, and the buffers' pages are taken as rows reach them: a short run of
    # a large replay needs only those, once the whole allocation fits in the machine at all.
    reach = config.total_steps * sum(spec.n_agents for spec in specs.values())
    available, physical = available_memory(), physical_memory()

    def fits(capacity: int | None = None) -> bool:
        sized = [replace(p, capacity=capacity or p.capacity) for p in plans.values()]
        return (available is None or sum(p.nbytes(reach) for p in sized) <= available) and (
            physical is None or sum(p.nbytes() for p in sized) <= physical
        )

    if fits():
        return
    low, high = 0, next(iter(plans.values())).capacity  # the largest buffer_size that fits: the need grows with it
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    fix = f"lower {config.algorithm_section()}.buffer_size (about {low:,} fits now)"
    touched = sum(p.nbytes(reach) for p in plans.values())
    if available is not None and touched > available:
        raise ConfigError(
            f"the replays need {human_bytes(touched)} ({'; '.join(parts)}; {config.total_steps:,} env steps fill up to {reach:,} "
            f"rows of each) but this machine has {human_bytes(available)} of memory available: {fix} or total_steps, or free memory"
        )
    raise ConfigError(f"the replays allocate {human_bytes(total)} ({'; '.join(parts)}), more than this machine's {human_bytes(physical or 0)} of memory: {fix}")


def note_group_critics(config: RunConfig, specs: dict[str, GroupSpec], configs: dict[str, PolicyConfig], names: list[str]) -> None:
    """Says where a learner's critic reads its agents' joint observations (MADDPG, MATD3,
    MASAC; MAPPO on ``joint_obs``) in an env of several groups: it reads its own group's
    agents only, which a user who expects every agent of the env would not see otherwise."""
    for pid, spec in specs.items():
        if configs[pid].kind != "learning":
            continue
        algo, section, _ = config.recipe(pid)
        reads = "observations and actions" if getattr(section, "critic", None) == "joint" else "observations" if getattr(section, "critic_input", None) == "joint_obs" else None
        if reads:
            others = [name for name in names if name != spec.name]
            print(f"note: the critics of policy {pid!r} ({algo}) read the {reads} of its {spec.n_agents} agent(s) {list(spec.agent_ids)}, not those of "
                  f"the env's other groups {others} (relayrl groups an env's agents by name prefix and spaces)")

