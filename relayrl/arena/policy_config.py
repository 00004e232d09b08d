"""A policy's config (``policies: {id: ...}``) and the registry of policy kinds, apart from
the policies' code so that a config validates without importing torch."""

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field, model_validator

from relayrl.core.registry import Lazy, Registry, of_type, registered
from relayrl.core.strict import Strict

# Policy kinds by their ``policies.<id>.kind`` name: a builder of the policy from a
# ``relayrl.arena.policy.PolicyBuild`` (the built-in ones at the end, by import path).
POLICY_KINDS: Registry[Callable[[Any], Any]] = Registry("policy kind", of_type("callable"))


class PolicyConfig(Strict):
    """One policy of ``policies: {id: ...}`` (paper 004, section 3).

    ``learning``: trains with the run's algorithm section and ``sharing``, changed by this
    policy's own keys under the same names (independent DDQN opponents: ``dqn:
    {param_sharing: false}``, ``sharing: {select: none}``). A policy that changes another
    learner section than the run's trains with that algorithm instead (that section of the
    run, or its defaults, with the policy's keys): a PPO team beside a DQN team, or, frozen,
    the DQN opponents a SEAC or MADDPG team plays against (``RunConfig.recipe``).
    A learning policy given ``checkpoint`` or ``pretrained`` starts from that policy's
    networks (a warm start): its acting networks, and where it learned there its critics,
    targets and statistics; its optimisers, replay, exploration schedule and counters start
    fresh, as this run's config sets them.
    ``frozen``: the same networks loaded from ``checkpoint`` (a run or checkpoint directory)
    or from the run of preset ``pretrained`` (seed ``pretrained_seed``) under the same runs
    root, learning off, acting with exploration ``explore``. ``random``: uniform actions.
    ``snapshot``: the networks of learning policy ``of`` as a self-play scheme last loaded
    them (``relayrl.arena.schemes.selfplay``), learning off, acting with ``explore``.
    ``scripted``: ``script: package.module.function``, called as
    ``fn(obs [W, N_p, ...], spec) -> actions [W, N_p, ...]``.
    """

    kind: Annotated[str, registered(POLICY_KINDS)] = "learning"
    dqn: dict[str, Any] = Field(default_factory=dict, description="changes to the run's dqn section for this policy")
    actor_critic: dict[str, Any] = Field(default_factory=dict, description="changes to the run's actor_critic section")
    qmix: dict[str, Any] = Field(default_factory=dict, description="changes to the run's qmix section")
    on_policy: dict[str, Any] = Field(default_factory=dict, description="changes to the run's on_policy section")
    centralised: dict[str, Any] = Field(default_factory=dict, description="changes to the run's centralised section")
    sharing: dict[str, Any] = Field(default_factory=dict, description="changes to the run's sharing section")
    model: dict[str, Any] = Field(
        default_factory=dict, description="changes to the run's model section, the Q-network a dqn policy builds (a frozen opponent trained with other sizes)"
    )
    script: str | None = Field(None, description="scripted: the acting function's import path")
    of: str | None = Field(None, description="snapshot: the learning policy whose snapshots it plays (self-play)")
    checkpoint: str | None = None
    pretrained: str | None = None
    pretrained_seed: int = 0
    pretrained_policy: str | None = Field(None, description="policy id in the pretrained run; default the same id")
    # By default a constant epsilon, the final one of a DDQN run's schedule (SPEC's frozen opponents). SUPER's
    # reference restores only the networks, so its opponents restart that schedule (0.1 to 0.001 over each
    # one's own first 100k actions): ``explore_from: 0.1, explore_steps: 100000`` is that schedule counted in
    # the run's env steps (docs/results/super/README.md, 2026-12-07).
    explore: float = Field(
        0.001, ge=0, description="frozen, snapshot: DQN's epsilon (at the end of explore_steps); for an actor-critic, > 0 adds its exploration noise"
    )
    explore_from: float | None = Field(
        None, ge=0, description="frozen, snapshot: the exploration at env step 0, falling linearly to explore over explore_steps (None: explore throughout)"
    )
    explore_steps: int = Field(0, ge=0, description="frozen, snapshot: the run's env steps over which explore_from falls to explore")
    agents: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="frozen, trained with a parameter set per agent: the saved agents whose sets drive this policy's entities, in order"
    )

    @model_validator(mode="after")
    def _fields_of_kind(self) -> "PolicyConfig":
        frozen, scripted = self.kind == "frozen", self.kind == "scripted"
        if (self.kind == "snapshot") != (self.of is not None):
            raise ValueError("a snapshot policy needs of=<learning policy id>, and only a snapshot policy takes one")
        if frozen and (self.checkpoint is None) == (self.pretrained is None):
            raise ValueError("a frozen policy needs exactly one of checkpoint=PATH or pretrained=PRESET")
        if self.kind == "learning" and self.checkpoint is not None and self.pretrained is not None:
            raise ValueError("a learning policy starts from one of checkpoint=PATH or pretrained=PRESET, not both")
        if self.kind not in ("frozen", "learning") and (self.checkpoint or self.pretrained):
            raise ValueError(f"checkpoint/pretrained apply to kind=frozen (the networks it acts with) and kind=learning (those it starts from), not {self.kind}")
        if not frozen and self.agents is not None:
            raise ValueError("agents applies to kind=frozen only (a learning policy starts from a run with as many parameter sets as it drives entities)")
        if self.kind not in ("frozen", "snapshot") and (self.explore_from is not None or self.explore_steps):
            raise ValueError(f"explore_from/explore_steps schedule a frozen or snapshot policy's exploration; a {self.kind} policy has none to schedule")
        if (self.explore_from is None) != (self.explore_steps == 0):
            raise ValueError(
                "a scheduled exploration needs both explore_from (its value at env step 0) and explore_steps > 0 (the env steps it "
                "takes to reach explore); give both, or neither for a constant explore"
            )
        if scripted != (self.script is not None):
            raise ValueError("a scripted policy needs script=package.module.function, and only a scripted policy takes one")
        if self.kind in ("random", "scripted") and (self.dqn or self.actor_critic or self.qmix or self.on_policy or self.centralised or self.sharing):
            raise ValueError(f"a {self.kind} policy has no networks: remove its dqn/actor_critic/qmix/on_policy/centralised/sharing keys")
        return self

    @property
    def learns(self) -> bool:
        return self.kind == "learning"


POLICY_KINDS.add("learning", Lazy("relayrl.arena.policy:learning_policy"))
POLICY_KINDS.add("frozen", Lazy("relayrl.arena.policy:frozen_policy"))
POLICY_KINDS.add("snapshot", Lazy("relayrl.arena.policy:snapshot_policy"))  # its networks come from the self-play scheme
POLICY_KINDS.add("random", Lazy("relayrl.arena.policy:random_policy"))
POLICY_KINDS.add("scripted", Lazy("relayrl.arena.policy:scripted_policy"))
