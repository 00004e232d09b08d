"""What every learner shares besides its contract (``relayrl.algos.algorithm.Learner``): the
acting part an env runner receives, the update metrics between two reports, the
hyperparameters a scheme may change, and the policy file a checkpoint keeps."""

import copy
import math
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from relayrl.algos.algorithm import ALGORITHMS
from relayrl.algos.layout import AgentLayout
from relayrl.core.errors import CheckpointError, ConfigError
from relayrl.core.specs import GroupSpec
from relayrl.sharing.relay import Relay
from relayrl.sharing.selectors import Selector


@dataclass
class MetricTally:
    """A learner's update metrics between two reports: sums and counts per metric (an
    actor loss, say, comes every ``policy_delay`` updates only)."""

    updates: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.sums[key] = self.sums.get(key, 0.0) + value
            self.counts[key] = self.counts.get(key, 0) + 1

    def mean(self, key: str) -> float:
        return self.sums[key] / self.counts[key] if self.counts.get(key) else math.nan


class Acting:
    """A learner's acting part: the algorithm's networks on the learner's agent layout, its
    exploration schedule times ``exploration_scale`` and the uniform actions of the first
    ``params.random_steps`` env steps. What an env runner acts with (no replay, sharing
    or counters); a learner is one too."""

    def __init__(self, spec: GroupSpec, algo: str, params: Any, algorithm: Any, layout: AgentLayout | None, exploration_scale: float = 1.0) -> None:
        """``layout``: how entities map to parameter sets (None: the algorithm takes the
        group's ``[W, N, ...]`` arrays itself, as the episode learners' do)."""
        self.spec = spec
        self.name = spec.name
        self.algo = algo
        self.params = params
        self.algorithm = algorithm
        self.layout = layout
        self.exploration_scale = exploration_scale

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """``obs [W, N, ...]`` -> actions ``[W, N, ...]`` among those ``mask [W, N, A]``
        allows: uniformly random for the first ``random_steps`` env steps, then with the
        exploration at ``env_steps``; greedy for ``env_steps=None`` (evaluation)."""
        if env_steps is not None and env_steps < self.params.random_steps:
            return self.algorithm.random_actions(obs.shape[:2], mask), carry
        return self.act_with(obs, carry, 0.0 if env_steps is None else self.exploration(env_steps), mask)

    def act_with(self, obs: np.ndarray, carry: Any, explore: float, mask: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """The algorithm's actions with exploration ``explore``, entities mapped to the
        parameter sets and back."""
        if obs.shape[1:] != (self.spec.n_agents, *self.spec.obs_shape):
            raise ValueError(
                f"policy {self.spec.name!r} acts on observations [W, {self.spec.n_agents}, {', '.join(map(str, self.spec.obs_shape))}] "
                f"(W env copies, a row for each of its entities {list(self.spec.agent_ids)}), got shape {obs.shape}: give every entity its row, "
                "zeros for one that left the episode (its action is then not used)"
            )
        if self.layout is None:
            return self.algorithm.act(obs, carry, explore, mask)
        sets_mask = None if mask is None else self.layout.to_sets(mask, 1)
        actions, carry = self.algorithm.act(self.layout.to_sets(obs, 1), carry, explore, sets_mask)
        return self.layout.to_entities(actions, obs.shape[:1]), carry

    def exploration(self, env_steps: int) -> float:
        return self.algorithm.exploration(env_steps) * self.exploration_scale

    def acting_copy(self) -> "Acting":
        """The acting part alone, sharing the networks (an env runner in another process
        receives a pickled copy)."""
        return Acting(self.spec, self.algo, self.params, self.algorithm, self.layout, self.exploration_scale)

    def policy_state(self) -> dict[str, Any]:
        """What acting needs: the algorithm's acting networks and how they map to entities."""
        return {"algo": self.algo, "param_sharing": self.params.param_sharing, "networks": self.algorithm.policy_state()}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        """Acting networks of this algorithm and layout (``policy_state``'s), from ``source``;
        networks of another algorithm, layout or shape are refused."""
        load_policy_state(self.algorithm, self.params.param_sharing, self.algo, state, source, repr(self.name))


# what a learner keeps of its own when it takes another's networks (population-based
# training): its exploration streams and update counter
OWN_STATE = ("rng", "generator", "updates")


class LearnerBase(Acting):
    """What both learners (off-policy transitions, episodes) have beyond acting: the
    metrics tally and its report, relaying to other learners, and the hyperparameters
    schemes read and set. ``selector``: the sharing's selection rule where the learner
    relays (SUPER), else None."""

    tally: MetricTally
    updates: int
    relay: Relay | None = None
    selector: Selector | None = None
    exports: bool = False  # whether it relays to other learners (``relay.between``)
    not_exchanged: str = ""  # why it takes no part in exchanges between learners, where it takes none

    @property
    def metric_columns(self) -> tuple[str, ...]:
        return self.algorithm.metric_columns

    def first_update(self) -> str:
        """When this learner's first update comes, in its config's words."""
        return f"from env step {self.params.learning_starts:,} on"

    def fragment_steps(self, num_envs: int) -> int:
        """Steps of every env copy per fragment: ``fragment_length`` env steps over the copies."""
        return max(1, self.params.fragment_length // num_envs)

    def report(self, env_steps: int) -> dict[str, Any]:
        """The metrics since the last report, by their reported names (the tally starts
        again): ``updates`` so far and ``new_updates`` since, the loss as ``td_loss``,
        ``grad_norm``, ``epsilon`` (NaN where the learner does not explore by epsilon), the
        seconds spent relaying to and drawing from other learners, each of
        ``metric_columns``' means, and the relay's counts (``relay``, None where it does not
        relay)."""
        tally, self.tally = self.tally, MetricTally()
        algorithm = self.algorithm
        return {
            "updates": self.updates,
            "new_updates": tally.updates,
            "td_loss": tally.mean(algorithm.loss_metric),
            "grad_norm": tally.mean("grad_norm"),
            "epsilon": self.exploration(env_steps) if algorithm.exploration_name == "epsilon" else math.nan,
            "relay_s": tally.sums.get("relay_s", 0.0),
            "draw_s": tally.sums.get("draw_s", 0.0),
            **{key: tally.mean(key) for key in self.metric_columns},
            "relay": self.relay.drain() if self.relay is not None else None,
        }

    def _not_exchanged(self, *args: Any) -> NoReturn:
        """What a learner that takes no part in exchanges answers for their calls."""
        raise ConfigError(
            f"policy {self.name!r} {self.not_exchanged}: it takes no part in relay.between or shared_replay.between, which move "
            "single transitions between per-agent off-policy learners"
        )

    def export_relay(self) -> None:
        """From now on this learner keeps what its selection picks for other learners
        (``outgoing``)."""
        self.exports = True

    def hyperparameters(self) -> dict[str, float]:
        """What a scheme may change: ``lr`` (the first optimiser's; the others keep their
        ratio to it), ``exploration`` (the scale of the exploration schedule) and, where the
        learner relays a share b of its transitions, ``bandwidth``."""
        found = {"lr": float(self.algorithm.optimizers()[0].param_groups[0]["lr"]), "exploration": self.exploration_scale}
        bandwidth = getattr(self.selector, "bandwidth", None)
        if bandwidth is not None:
            found["bandwidth"] = float(bandwidth)
        return found

    def set_hyperparameters(self, values: dict[str, float]) -> None:
        """Sets any of ``hyperparameters()``' keys; an unknown key is an error."""
        unknown = set(values) - set(self.hyperparameters())
        if unknown:
            raise KeyError(f"policy {self.name!r} has no hyperparameter {sorted(unknown)}; it has {sorted(self.hyperparameters())}")
        if "lr" in values:
            optimizers = self.algorithm.optimizers()
            first = optimizers[0].param_groups[0]["lr"]
            for optimizer in optimizers:
                for group in optimizer.param_groups:
                    group["lr"] = values["lr"] if group["lr"] == first else group["lr"] * values["lr"] / first
        if "exploration" in values:
            self.exploration_scale = values["exploration"]
        if "bandwidth" in values:
            assert self.selector is not None
            self.selector.bandwidth = values["bandwidth"]

    def start_from(self, state: dict[str, Any], source: str) -> None:
        """Networks, targets and statistics of another learner's ``state_dict()["algorithm"]``
        (a warm start from ``source``); its optimisers, exploration streams and update counter
        stay this learner's own, fresh ones."""
        own = self.algorithm.state_dict()
        taken = {key: value for key, value in state.items() if key not in OWN_STATE and not _optimizer_state(value)}
        try:
            self.algorithm.load_state_dict({**own, **taken})
        except (RuntimeError, KeyError, ValueError) as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            raise CheckpointError(f"{source}: {self.name!r} cannot start from its learner's networks ({' '.join(lines[:3])[:400]}): "
                                  "give it the settings that policy was trained with (its run's config.yaml)") from None

    def copy_networks_from(self, other: "LearnerBase") -> None:
        """Takes ``other``'s networks, targets and optimiser state (learning rates included);
        its own replay, exploration streams and counters stay."""
        own = self.algorithm.state_dict()
        # a deep copy: an optimiser's load_state_dict keeps the given state tensors, which
        # the two learners would then update in place together
        taken = copy.deepcopy({key: value for key, value in other.algorithm.state_dict().items() if key not in OWN_STATE})
        self.algorithm.load_state_dict({**own, **taken})


def load_policy_state(algorithm: Any, param_sharing: bool, algo: str, state: dict[str, Any], source: str, who: str) -> None:
    """Loads a learner's ``policy_state`` into ``algorithm`` (a frozen opponent, an env
    runner's copy or an evaluation), refusing networks of another algorithm, layout or shape."""
    if state["algo"] != algo or state["param_sharing"] != param_sharing:
        fix = ""
        if state["algo"] in ALGORITHMS:  # the policy's keys that load it: its algorithm's section
            section, name = ALGORITHMS[state["algo"]].section, who.strip("'")
            keys = f"algo: {state['algo']}, param_sharing: {str(state['param_sharing']).lower()}, ..."
            fix = f": give {who} the settings it was trained with (its run's config.yaml), e.g. policies.{name}: {{{section}: {{{keys}}}}}"
        raise CheckpointError(
            f"{source}: {who} was trained as {state['algo']} with param_sharing={state['param_sharing']}; "
            f"this run has {algo} with param_sharing={param_sharing}{fix}"
        )
    saved, here = _parameter_sets(state["networks"]), _parameter_sets(algorithm.policy_state())
    if not param_sharing and saved != here:
        raise CheckpointError(
            f"{source}: {who} was trained with a parameter set per agent for {saved} agents and drives {here} entities here: "
            f"give it {saved} slots, choose {here} of its agents' sets with the policy's agents key (agents: [0, 1, ...]), "
            f"or train it with param_sharing=true (one parameter set drives any number of entities)"
        )
    widths = _input_width(state["networks"]), _input_width(algorithm.policy_state())
    if None not in widths and widths[0] != widths[1]:
        raise CheckpointError(
            f"{source}: {who}'s networks read {widths[0]} inputs per entity and this run gives it {widths[1]}: it was trained on "
            "observations of another size or, with agent_id, driving another number of entities (agent_id adds a one-hot of the "
            "entity's index, as wide as the entities the policy drives): give it the env settings and the number of entities it was trained with"
        )
    try:
        algorithm.load_policy_state(state["networks"])
    except (RuntimeError, KeyError) as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        message = " ".join(lines[:3])[:400]  # torch's first line is a title; the next name what differs, every tensor of it
        name = who.strip("'")
        raise CheckpointError(f"{source}: {who}'s networks do not fit the ones this run builds for it ({message}): give it the sizes it was trained "
                              f"with, from its run's config.yaml (dqn: policies.{name}.model; the other learners: their section's, e.g. "
                              f"policies.{name}.on_policy: {{hidden: [...]}})") from None


def chosen_parameter_sets(state: dict[str, Any], agents: list[int], source: str, who: str) -> dict[str, Any]:
    """A ``policy_state`` of per-agent parameter sets cut down to the sets of ``agents``, in
    that order (a frozen policy trained on more entities than it drives here)."""
    saved = _parameter_sets(state["networks"])
    if state["param_sharing"] or saved is None:
        raise CheckpointError(f"{source}: {who} shares one parameter set among its agents: remove its agents key (the set drives any number of entities)")
    if max(agents) >= saved:
        raise CheckpointError(f"{source}: {who} has parameter sets for agents 0 to {saved - 1}; its agents key names {max(agents)}")

    def cut(networks: Any) -> Any:
        if isinstance(networks, dict):
            return {key: cut(value) for key, value in networks.items()}
        return networks[list(agents)] if hasattr(networks, "shape") and len(networks.shape) and networks.shape[0] == saved else networks

    return {**state, "networks": cut(state["networks"])}


def _optimizer_state(value: Any) -> bool:
    """Whether ``value`` is a torch optimiser's ``state_dict()``."""
    return isinstance(value, dict) and set(value) == {"state", "param_groups"}


def _first_shape(networks: Any) -> tuple[int, ...] | None:
    """The shape of the first tensor in ``networks`` (nested dicts): the first layer's."""
    if isinstance(networks, dict):
        for value in networks.values():
            found = _first_shape(value)
            if found is not None:
                return found
        return None
    return tuple(networks.shape) if hasattr(networks, "shape") and len(networks.shape) else None


def _parameter_sets(networks: Any) -> int | None:
    """The leading (parameter-set) size of the first tensor in ``networks``."""
    shape = _first_shape(networks)
    return shape[0] if shape else None


def _input_width(networks: Any) -> int | None:
    """The inputs per entity of a first layer stored as [sets, inputs, outputs] (the
    stacked linear layers); None for another first layer (a convolution's)."""
    shape = _first_shape(networks)
    return shape[1] if shape is not None and len(shape) == 3 else None
