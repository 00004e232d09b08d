"""Policies by id: what acts for entities (paper 004, section 3; DESIGN.md §4).

A learning policy acts through its learner and learns from what it observes; a frozen one
acts with networks loaded from a checkpoint, learning off; a random one acts uniformly; a
scripted one calls a user's function named by its import path. Kinds join through
``POLICY_KINDS`` (``relayrl.arena.policy_config``).
Every policy maps its workers' ``obs [W, N_p, ...]`` (and a recurrent ``carry``) to actions
``[W, N_p, ...]`` (``relayrl.arena.match``); ``env_steps`` is where training stands (None:
evaluation).
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from relayrl.algos import ALGORITHMS
from relayrl.algos.algorithm import Algorithm, Learner, algorithms_with, allowed_choice
from relayrl.algos.layout import AgentLayout
from relayrl.algos.learner import Acting, chosen_parameter_sets
from relayrl.algos.off_policy import make_learner
from relayrl.algos.schedules import linear_schedule
from relayrl.arena.policy_config import PolicyConfig
from relayrl.core.errors import CheckpointError, ConfigError, PolicyError
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.sharing.config import SharingConfig


class Policy(Protocol):
    spec: GroupSpec

    # ``mask [W, N_p, A]``: the discrete actions each entity may take now (None: all)
    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]: ...

    def policy_state(self) -> dict[str, Any]: ...  # what acting needs (a checkpoint's policy file)

    def load_policy_state(self, state: dict[str, Any], source: str) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def acting_copy(self) -> "Policy": ...  # what an env runner acts with: no learning machinery

    @property
    def acting_rng(self) -> np.random.Generator | None: ...  # the stream acting draws from (None: deterministic)


class LearningPolicy:
    """Acts with its learner's exploration and learns from its entities' experience."""

    def __init__(self, learner: Learner) -> None:
        self.learner = learner
        self.spec = learner.spec

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        return self.learner.act(obs, carry, env_steps, mask)

    def policy_state(self) -> dict[str, Any]:
        return self.learner.policy_state()

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        """Networks from a checkpoint's policy file (evaluating a saved run), or from its
        learner's actor."""
        self.learner.load_policy_state(state, source)

    def state_dict(self) -> dict[str, Any]:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state)

    def acting_copy(self) -> "LearningPolicy":
        return LearningPolicy(self.learner.acting_copy())

    @property
    def acting_rng(self) -> np.random.Generator:
        return self.learner.algorithm.rng


class FrozenPolicy(Acting):
    """A trained policy's networks with learning off, acting with exploration
    ``PolicyConfig.explore``: from the first env step on, or, given ``explore_from``, from
    ``explore_steps`` of the run's env steps on, linear from ``explore_from`` until then (a
    frozen opponent of SUPER's reference restarts its DQN schedule); ``explore`` in
    evaluations. ``source`` names the checkpoint the networks came from."""

    def __init__(self, spec: GroupSpec, algo: str, params: Any, algorithm: Algorithm, layout: AgentLayout, config: PolicyConfig) -> None:
        super().__init__(spec, algo, params, algorithm, layout)
        self.explore = config.explore
        self.explore_from = config.explore_from
        self.explore_steps = config.explore_steps
        self.source = ""

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        return self.act_with(obs, carry, self.exploration(env_steps), mask)

    def exploration(self, env_steps: int | None) -> float:
        if env_steps is None or self.explore_from is None:
            return self.explore
        return linear_schedule(self.explore_from, self.explore, self.explore_steps, env_steps)

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        super().load_policy_state(state, source)
        self.source = source

    def state_dict(self) -> dict[str, Any]:
        """The networks and the exploration's random stream (a resume continues it)."""
        return {"algorithm": self.algorithm.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(state["algorithm"])

    def acting_copy(self) -> "FrozenPolicy":
        return self

    @property
    def acting_rng(self) -> np.random.Generator:
        return self.algorithm.rng


class RandomPolicy:
    """Uniformly random actions: discrete choices, or vectors within the bounds (the
    baseline trained agents must beat)."""

    def __init__(self, spec: GroupSpec, seed: int) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        spec, shape = self.spec, obs.shape[:2]
        if spec.continuous:
            return self.rng.uniform(spec.action_low, spec.action_high, (*shape, *spec.action_shape)).astype(np.float32), carry
        if mask is not None:
            return allowed_choice(mask, self.rng), carry
        return self.rng.integers(0, spec.n_actions, shape), carry

    def policy_state(self) -> dict[str, Any]:
        return {"random": True}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        if not state.get("random"):
            raise CheckpointError(f"{source}: policy {self.spec.name!r} was not a random one there")

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]

    def acting_copy(self) -> "RandomPolicy":
        return self

    @property
    def acting_rng(self) -> np.random.Generator:
        return self.rng


def load_callable(path: str) -> Callable[..., Any]:
    """``package.module.function`` (or ``package.module:function``) imported by its path."""
    module, _, name = path.replace(":", ".").rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name) if module else None
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"script {path!r} cannot be loaded ({type(error).__name__}: {error}): name a function as package.module.function") from None
    if not callable(found):
        raise ConfigError(f"script {path!r} is not a function: name one as package.module.function")
    return found


class ScriptedPolicy:
    """A user's function acting for entities: ``fn(obs [W, N_p, ...], spec) -> actions [W, N_p, ...]``
    (where the env masks actions, the function sees ``obs`` only and must choose allowed ones)
    (a heuristic opponent, a fixed curriculum partner). It learns nothing and keeps no state."""

    def __init__(self, spec: GroupSpec, script: str) -> None:
        self.spec = spec
        self.script = script
        self.fn = load_callable(script)

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        try:
            returned = self.fn(obs, self.spec)
        except Exception as error:
            raise PolicyError(f"{self._who()} raised {type(error).__name__}: {error}") from error
        return self._checked(np.asarray(returned), obs.shape[:2], mask), carry

    def _who(self) -> str:
        return f"policy {self.spec.name!r} (script {self.script})"

    def _checked(self, actions: np.ndarray, batch: tuple[int, ...], mask: np.ndarray | None) -> np.ndarray:
        """The script's actions as the env takes them, or a PolicyError saying what is wrong:
        the shape, a non-integer or out-of-range choice, a choice the mask forbids, a vector
        outside the bounds."""
        spec, expected = self.spec, (*batch, *self.spec.action_shape)
        if actions.shape != expected:
            raise PolicyError(f"{self._who()} returned actions of shape {actions.shape}; expected {expected} (copies, entities, *action shape)")
        if not np.issubdtype(actions.dtype, np.number) or not np.isfinite(actions).all():
            raise PolicyError(f"{self._who()} returned actions that are not finite numbers ({actions.dtype})")
        if spec.continuous:
            low, high = np.asarray(spec.action_low).reshape(spec.action_shape), np.asarray(spec.action_high).reshape(spec.action_shape)
            outside = (actions < low) | (actions > high)
            if outside.any():
                where = tuple(int(i) for i in np.argwhere(outside)[0])
                raise PolicyError(f"{self._who()} returned {actions[where]} at {where}, outside the action bounds [{low.min()}, {high.max()}]")
            return actions.astype(np.float32, copy=False)
        if not np.array_equal(actions, np.round(actions)):
            raise PolicyError(f"{self._who()} returned non-integer choices ({actions[actions != np.round(actions)][0]}) for discrete actions: return integers")
        choices = actions.astype(np.int64)
        bad = (choices < 0) | (choices >= spec.n_actions)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise PolicyError(f"{self._who()} returned action {choices[where]} at (copy, entity) {where}; its actions are 0..{spec.n_actions - 1}")
        if mask is not None:
            forbidden = ~np.take_along_axis(mask, choices[..., None], -1)[..., 0]
            if forbidden.any():
                where = tuple(int(i) for i in np.argwhere(forbidden)[0])
                raise PolicyError(f"{self._who()} returned action {choices[where]} at (copy, entity) {where}, which the env's action mask forbids there")
        return choices

    def policy_state(self) -> dict[str, Any]:
        return {"script": self.script}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        if state.get("script") != self.script:
            raise CheckpointError(f"{source}: policy {self.spec.name!r} was {state.get('script') or 'networks'}, not {self.script}")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def acting_copy(self) -> "ScriptedPolicy":
        return self

    @property
    def acting_rng(self) -> None:
        return None


@dataclass
class PolicyBuild:
    """What a policy kind's builder gets: the slots' spaces, its config, the algorithm
    recipe (registered algorithm, its config section, sharing), where and how seeded it
    runs, ``saved()``: the policy file state and source a frozen policy loads (and a
    learning one starts from), and ``trained()``: the learner state it starts from (None
    where the source policy did not learn there)."""

    spec: GroupSpec
    config: PolicyConfig
    recipe: tuple[str, Any, SharingConfig]
    device: torch.device
    seeds: list[int]
    timer: SectionTimer
    options: dict[str, Any]
    saved: Callable[[], tuple[dict[str, Any], str]] | None = None
    trained: Callable[[], dict[str, Any] | None] | None = None


def _check_spaces(build: PolicyBuild) -> None:
    algo, spec = build.recipe[0], build.spec
    kind = "continuous" if spec.continuous else "discrete"
    if kind not in ALGORITHMS[algo].capabilities.actions:
        have = f"Box actions {spec.action_shape}" if spec.continuous else f"{spec.n_actions} discrete actions"
        able = algorithms_with(lambda capabilities: kind in capabilities.actions)
        raise ConfigError(
            f"policy {spec.name!r} trains {algo}, which cannot act on its slots' {have} "
            f"({', '.join(able)} can: train one of them, or give those slots another policy)"
        )


def learning_policy(build: PolicyBuild) -> LearningPolicy:
    """A learner, started from a trained policy's networks where the config names one and
    the build gives them (``trained``: not on a resume, which loads the run's own, nor in a
    learner actor, which starts from its driver's learner)."""
    _check_spaces(build)
    algo, section, sharing = build.recipe
    policy = LearningPolicy(make_learner(build.spec, algo, section, sharing, build.device, build.seeds, build.timer, **build.options))
    if (build.config.checkpoint or build.config.pretrained) and build.saved is not None and build.trained is not None:
        state, source = build.saved()
        policy.learner.load_policy_state(state, source)  # refuses another algorithm, layout or shape, naming the keys
        learned = build.trained()
        if learned is not None:
            policy.learner.start_from(learned, source)
    return policy


def snapshot_policy(build: PolicyBuild) -> FrozenPolicy:
    _check_spaces(build)
    algo, section, _ = build.recipe
    params = section.learner_params()
    # the networks as its learner acts with them: per parameter set, or on the group's arrays (QMIX's agents)
    layout = None if ALGORITHMS[algo].capabilities.group_acting else AgentLayout(build.spec.n_agents, params.param_sharing)
    algorithm = ALGORITHMS[algo].make(build.spec, section, 1 if layout is None else layout.n_sets, build.device, build.seeds[0], **build.options)
    return FrozenPolicy(build.spec, algo, params, algorithm, layout, build.config)


def frozen_policy(build: PolicyBuild) -> FrozenPolicy:
    policy = snapshot_policy(build)
    assert build.saved is not None, "a frozen policy's build says where its networks are saved"
    state, source = build.saved()
    if build.config.agents is not None:
        state = chosen_parameter_sets(state, build.config.agents, source, repr(build.spec.name))
    policy.load_policy_state(state, source)
    return policy


def random_policy(build: PolicyBuild) -> RandomPolicy:
    return RandomPolicy(build.spec, build.seeds[0])


def scripted_policy(build: PolicyBuild) -> ScriptedPolicy:
    return ScriptedPolicy(build.spec, build.config.script or "")
