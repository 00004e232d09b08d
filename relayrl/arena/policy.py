"""Policies: what acts for the entities of a group (paper 004, section 3; DESIGN.md §4).

A learning policy acts through its learner and learns from what it observes; a frozen one
acts with networks loaded from a checkpoint, learning off; a random one acts uniformly; a
scripted one calls a user's function named by its import path.
Every policy maps ``obs [E, N, ...]`` (and a recurrent ``carry``) to actions
``[E, N, ...]``; ``env_steps`` is where training stands (None: evaluation).
"""

import importlib
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from relayrl.algos.algorithm import Algorithm
from relayrl.algos.layout import AgentLayout
from relayrl.algos.off_policy import OffPolicyLearner, load_policy_state
from relayrl.core.errors import CheckpointError, ConfigError
from relayrl.core.specs import GroupSpec


class Policy(Protocol):
    spec: GroupSpec

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None) -> tuple[np.ndarray, Any]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class LearningPolicy:
    """Acts with its learner's exploration and learns from its entities' experience."""

    def __init__(self, learner: OffPolicyLearner) -> None:
        self.learner = learner
        self.spec = learner.spec

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None) -> tuple[np.ndarray, Any]:
        return self.learner.act(obs, carry, env_steps)

    def policy_state(self) -> dict[str, Any]:
        return self.learner.policy_state()

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        """Networks from a checkpoint's policy file (evaluating a saved run)."""
        learner = self.learner
        load_policy_state(learner.algorithm, learner.settings.param_sharing, learner.algo, state, source, repr(self.spec.name))

    def state_dict(self) -> dict[str, Any]:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state)


class FrozenPolicy:
    """A trained policy's networks with learning off, acting with a fixed exploration
    (a DDQN opponent restored from a finished run keeps that run's final epsilon, paper
    000 appendix C.3)."""

    def __init__(self, spec: GroupSpec, algo: str, algorithm: Algorithm, layout: AgentLayout, explore: float) -> None:
        self.spec = spec
        self.algo = algo
        self.algorithm = algorithm
        self.layout = layout
        self.explore = explore

    def policy_state(self) -> dict[str, Any]:
        return {"algo": self.algo, "param_sharing": self.layout.shared, "networks": self.algorithm.policy_state()}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        load_policy_state(self.algorithm, self.layout.shared, self.algo, state, source, repr(self.spec.name))

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None) -> tuple[np.ndarray, Any]:
        actions, carry = self.algorithm.act(self.layout.to_sets(obs, 1), carry, self.explore)
        return self.layout.to_entities(actions, obs.shape[:1]), carry

    def state_dict(self) -> dict[str, Any]:
        """The networks and the exploration's random stream (a resume continues it)."""
        return {"algorithm": self.algorithm.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(state["algorithm"])


class RandomPolicy:
    """Uniformly random actions: discrete choices, or vectors within the bounds (the
    baseline trained agents must beat)."""

    def __init__(self, spec: GroupSpec, seed: int) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None) -> tuple[np.ndarray, Any]:
        spec, shape = self.spec, obs.shape[:2]
        if spec.continuous:
            return self.rng.uniform(spec.action_low, spec.action_high, (*shape, *spec.action_shape)).astype(np.float32), carry
        return self.rng.integers(0, spec.n_actions, shape), carry

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


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
    """A user's function acting for a group: ``fn(obs [E, N, ...], spec) -> actions [E, N, ...]``
    (a heuristic opponent, a fixed curriculum partner). It learns nothing and keeps no state."""

    def __init__(self, spec: GroupSpec, script: str) -> None:
        self.spec = spec
        self.script = script
        self.fn = load_callable(script)

    def act(self, obs: np.ndarray, carry: Any, env_steps: int | None) -> tuple[np.ndarray, Any]:
        actions = np.asarray(self.fn(obs, self.spec))
        expected = (*obs.shape[:2], *self.spec.action_shape)
        if actions.shape != expected:
            raise ValueError(f"script {self.script} returned actions of shape {actions.shape} for group {self.spec.name!r}; expected {expected}")
        return actions, carry

    def policy_state(self) -> dict[str, Any]:
        return {"script": self.script}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        if state.get("script") != self.script:
            raise CheckpointError(f"{source}: group {self.spec.name!r} was driven by {state.get('script') or 'networks'}, not {self.script}")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass
