"""The contract every algorithm keeps (DESIGN.md §4): math only, P parameter sets, no
replay and no loop. Learners (``off_policy.py``) compose an algorithm with storage,
sampling and sharing; algorithms join through ``ALGORITHMS``.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import numpy as np
from pydantic import AfterValidator

from relayrl.core.errors import ConfigError
from relayrl.core.registry import Registry, of_type, registered
from relayrl.core.specs import GroupSpec
from relayrl.replay import FieldSpec
from relayrl.sharing.exchange import Sharer

if TYPE_CHECKING:  # the registry and its entries are read without importing torch
    import torch

# Per-transition weights ``[P, B]``: none (all ones), given, or computed from the
# algorithm's own actions on the batch's states (DPS needs exactly the actor output the
# update computes anyway, so it is computed once).
Weights: TypeAlias = "np.ndarray | torch.Tensor | Callable[[torch.Tensor], torch.Tensor] | None"


class Algorithm(Protocol):
    """P agents' networks and their update. Arrays are ``[P, B, ...]``.

    ``explore`` is the exploration level, read by each algorithm its own way: the epsilon
    of epsilon-greedy, or whether deterministic actors add their Gaussian noise; 0 acts
    greedily. ``carry`` is the recurrent state ``[P, M, ...]`` (None for feed-forward
    networks).
    """

    n_sets: int
    device: "torch.device"
    # metric the run reports as ``td_loss`` (the critic's loss for actor-critics)
    loss_metric: str
    # metrics besides the loss that stop a run when they are not finite
    checked_metrics: tuple[str, ...]
    # metrics besides the loss that get a column in metrics.csv
    metric_columns: tuple[str, ...]
    # the metrics column ``exploration`` goes to ("epsilon"), or None to report none
    exploration_name: str | None

    # ``mask [P, M, A]``: the discrete actions each row may take (None: all of them)
    def act(self, obs: np.ndarray, carry: Any, explore: float, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]: ...

    def random_actions(self, shape: tuple[int, ...], mask: np.ndarray | None = None) -> np.ndarray: ...

    def exploration(self, env_steps: int) -> float: ...

    def observe(self, obs: np.ndarray, mask: np.ndarray) -> None: ...

    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray: ...

    def update(self, batch: dict[str, np.ndarray], weights: Weights) -> tuple[np.ndarray | None, dict[str, float]]: ...

    def sync_target(self) -> None: ...

    def optimizers(self) -> "list[torch.optim.Optimizer]": ...  # what population-based training perturbs

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def policy_state(self) -> dict[str, Any]: ...

    def load_policy_state(self, state: dict[str, Any]) -> None: ...


class Learner(Sharer, Protocol):
    """What a learning policy drives (DESIGN.md §4): the off-policy learner of transitions
    (``off_policy.py``) or the learner of whole episodes (``episode_learner.py``). Everything
    the run, the learner pools and the exchanges between learners (``Sharer``'s methods)
    call is here."""

    spec: GroupSpec
    name: str
    algo: str
    algorithm: Algorithm
    params: "OffPolicyParams | OnPolicyParams"
    updates: int  # gradient steps so far

    @property
    def metric_columns(self) -> tuple[str, ...]: ...  # the learner's own columns beside the loss

    # acting
    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]: ...

    def exploration(self, env_steps: int) -> float: ...

    def acting_copy(self) -> Any: ...  # the acting part alone (``relayrl.algos.learner.Acting``)

    def policy_state(self) -> dict[str, Any]: ...

    def load_policy_state(self, state: dict[str, Any], source: str) -> None: ...  # acting networks from elsewhere

    # experience and learning
    def observe(self, fragment: dict[str, np.ndarray]) -> int: ...

    def end_workers(self, workers: np.ndarray) -> None: ...  # their episodes in flight end as truncations

    def learn(self, env_steps: int) -> None: ...

    def first_update(self) -> str: ...  # when its first update comes, in its config's words

    def fragment_steps(self, num_envs: int) -> int: ...  # steps of every env copy it would take per fragment

    def report(self, env_steps: int) -> dict[str, Any]: ...  # metrics since the last report, by reported name

    # what schemes change (population-based training)
    def hyperparameters(self) -> dict[str, float]: ...

    def set_hyperparameters(self, values: dict[str, float]) -> None: ...

    def copy_networks_from(self, other: Any) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class OffPolicyParams:
    """How an off-policy learner feeds its algorithm; each algorithm's config gives them.

    ``fragment_length`` env steps (over all env copies) per iteration and per update of
    each agent (SPEC §1.1: 4 for SUPER; paper 001, C.2: 1 for DASE), from
    ``learning_starts`` on, ``updates_per_fragment`` gradient steps each; before
    ``random_steps`` the agents act uniformly at random. Hard target syncs every
    ``target_update_interval`` env steps (None: the algorithm updates its targets softly).
    """

    batch_size: int  # per agent
    buffer_size: int  # per agent, or of the one shared replay
    gamma: float
    fragment_length: int
    learning_starts: int
    target_update_interval: int | None
    n_step: int = 1
    time_limit_as_terminal: bool = False
    random_steps: int = 0
    updates_per_fragment: int = 1
    param_sharing: bool = False
    prioritized: bool = False
    alpha: float = 0.6
    beta: float = 0.4
    priority_eps: float = 1e-6
    new_priority: str = "max"  # a new row's priority: the replay's max, its own |TD error| ("td"), or 1 ("one")


@dataclass(frozen=True)
class OnPolicyParams:
    """What the code common to every learner reads of an on-policy learner's config (its
    rollouts are the learner's own business): the layout, and no random warm-up."""

    param_sharing: bool = False
    random_steps: int = 0


ActionKind = Literal["discrete", "continuous"]


@dataclass(frozen=True)
class Capabilities:
    """What an algorithm supports (DESIGN.md §4). Config validation and policy building read
    these instead of naming algorithms, so an algorithm declares them once, where it registers."""

    actions: frozenset[ActionKind]  # the action spaces it acts in: Discrete, Box
    on_policy: bool = False  # learns only from its current policy's experience
    recurrent: bool = False  # its agents carry a hidden state through an episode
    centralised: bool = False  # trains its group's agents together (a mixer, a centralised critic)
    group_acting: bool = False  # acts on its group's [W, N] arrays itself (an episode learner's agents), not per parameter set
    reads_state: bool = False  # learns from the env's global state (``state()``), which envs then compute
    param_sharing: bool = False  # its agents may share one parameter set
    network_factory: bool = False  # its networks may come from the network_factory given to train() in Python
    scaled_exploration: bool = False  # it explores by a schedule (epsilon) that a scheme's exploration scale multiplies
    # the sharing modes that apply (DESIGN.md §1)
    select: bool = False  # sharing.select other than none: a selection rule at the sender (SUPER)
    shared_replay: bool = False  # sharing.replay=shared, corrected by sharing.correction (dps: DASE)
    relay_between: bool = False  # a member of relay.between
    shared_replay_between: bool = False  # a member of shared_replay.between

    def describe(self) -> str:
        """The capabilities in words (``relayrl list``)."""
        traits = [
            f"{' and '.join(sorted(self.actions))} actions",
            "on-policy" if self.on_policy else "off-policy",
            *(["recurrent"] if self.recurrent else []),
            *(["centralised"] if self.centralised else []),
            *(["reads the global state"] if self.reads_state else []),
            *(["parameter sharing"] if self.param_sharing else []),
            *(["your network (network_factory)"] if self.network_factory else []),
        ]
        modes = [
            mode
            for mode, applies in (
                ("sharing.select", self.select),
                ("sharing.replay=shared", self.shared_replay),
                ("relay.between", self.relay_between),
                ("shared_replay.between", self.shared_replay_between),
            )
            if applies
        ]
        return ", ".join(traits) + (f"; sharing modes: {', '.join(modes)}" if modes else "; no sharing mode")


# The learner config sections (``relayrl.algos.sections``), each a field of RunConfig and of
# PolicyConfig: ``dqn`` is the default learner, the others replace it where set.
SECTIONS = ("dqn", "qmix", "actor_critic", "on_policy", "centralised")


@dataclass(frozen=True)
class AlgorithmEntry:
    """``make(spec, config, n_sets, device, seed, **options)`` builds the algorithm for a
    group from the run's config section ``section`` (``dqn``, ``actor_critic``, ``qmix``,
    ``on_policy`` or ``centralised``, each naming it in its ``algo`` key); ``fields(spec)``
    are the observation and action fields its replay stores; ``capabilities``: what it
    supports. ``learner`` builds the learner that feeds it, with the off-policy learner's
    arguments, and ``plan(spec, config)`` is that learner's replay before anything is built
    (None: the off-policy learner of transitions, ``relayrl.algos.off_policy``).

    ``base``: the built-in algorithm whose section defaults, keys and update variant the
    entry takes (``td3``'s twin critics, ``a2c``'s defaults). Built-in entries name
    themselves, so an entry registered again under a new name trains as the one it copies;
    None: the name it is registered under (an algorithm of a user's own)."""

    make: Callable[..., Algorithm]
    fields: Callable[[GroupSpec], dict[str, FieldSpec]]
    section: str
    capabilities: Capabilities
    learner: Callable[..., Any] | None = None
    plan: Callable[[GroupSpec, Any], Any] | None = None
    base: str | None = None

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise ValueError(f"an algorithm's section {self.section!r} is not one of relayrl's config sections ({', '.join(SECTIONS)}): register it with "
                             "the section whose keys it reads (a new section is a field of RunConfig and PolicyConfig, and a name in SECTIONS)")
        if not isinstance(self.capabilities, Capabilities):
            raise TypeError(f"an algorithm's capabilities are a relayrl.algos.Capabilities, not {type(self.capabilities).__name__}")
        for key in ("make", "fields", "learner", "plan"):
            if getattr(self, key) is not None and not callable(getattr(self, key)):
                raise TypeError(f"an algorithm's {key} must be callable (a function, a class or a Lazy import path), not {getattr(self, key)!r}")


ALGORITHMS: Registry[AlgorithmEntry] = Registry("algorithm", of_type(AlgorithmEntry))


def base_algorithm(algo: str) -> str:
    """The built-in algorithm ``algo`` trains as (``AlgorithmEntry.base``): builders and
    section defaults test this name, never the one a user registered."""
    return (ALGORITHMS[algo].base or algo) if algo in ALGORITHMS else algo


def algo_key(section: str) -> AfterValidator:
    """Validates ``<section>.algo``: an algorithm registered with that config section; one
    registered with another section is refused with the section that takes it."""
    listed = registered(ALGORITHMS, lambda entry: entry.section == section).func

    def check(name: str) -> str:
        if name in ALGORITHMS and ALGORITHMS[name].section != section:
            home = ALGORITHMS[name].section
            raise ValueError(f"{name} is configured in the {home} section, not in {section}: give {home}.algo={name} "
                             f"({home}: {{algo: {name}}}) in place of the {section} section")
        return listed(name)

    return AfterValidator(check)


def algorithms_with(has: Callable[[Capabilities], bool]) -> list[str]:
    """The registered algorithms whose capabilities ``has`` accepts (what a message offers instead)."""
    return sorted(name for name in ALGORITHMS if has(ALGORITHMS[name].capabilities))


def wrong_actions(spec: GroupSpec, learners: str) -> ConfigError:
    """The refusal of a group whose action space ``learners`` cannot act in, naming the
    registered algorithms that can."""
    kind = "continuous" if spec.continuous else "discrete"
    has = f"Box actions {spec.action_shape}" if spec.continuous else f"{spec.n_actions} discrete actions"
    needs = "discrete" if spec.continuous else "continuous (Box)"
    able = ", ".join(algorithms_with(lambda capabilities: kind in capabilities.actions))
    return ConfigError(
        f"group {spec.name!r} has {has}; {learners} need {needs} ones ({able} act on {kind} actions: train one of them, "
        f"or give the env {needs} actions, as mpe2's envs do with env.settings.continuous_actions)"
    )


def allowed_choice(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``mask [..., A]``, uniform among the allowed ones (a row that
    allows none takes action 0)."""
    return np.where(mask, rng.random(mask.shape), -1.0).argmax(axis=-1)
