"""Collectors: where a run's env copies step (DESIGN.md §4). One protocol for copies stepped
in the training process (``LocalCollector``, over the one ``Rollout``) and copies stepped by
Ray env runners (``relayrl.arena.ray.collect.RayCollector``), so the run never asks where
they are.

A collector plays a ``Venue``: the env copies of the run (or of its current round) and the
matches that place policies on their entities. Per fragment it returns every policy's steps
``[T, W, N_p, ...]``, the episodes that finished, and, where copies restarted (a runner
died), each policy's workers whose episodes in flight were lost.
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from relayrl.arena.match import Match, compile_matches
from relayrl.arena.policy import Policy
from relayrl.arena.rollout import Rollout, env_check
from relayrl.core.profiler import SectionTimer
from relayrl.envs.episodes import EpisodeStats
from relayrl.envs.registry import EnvFactory
from relayrl.envs.types import GroupObs
from relayrl.envs.vector_env import VectorEnv


@dataclass
class Venue:
    """Where matches are played: the env section (name and settings), its factory, the E
    copies built here (their groups, and for a local collector the copies it steps) and the
    match list repeated over the copies."""

    env: Any  # the config's env section
    factory: EnvFactory
    venv: VectorEnv
    matches: list[Match]


@dataclass
class Collected:
    fragments: dict[str, dict[str, np.ndarray]]  # per policy, [T, W, N_p, ...]
    episodes: EpisodeStats
    env_steps: int  # env steps the fragment took (steps x copies)
    restarted: dict[str, np.ndarray] = field(default_factory=dict)  # per policy: workers whose copies restarted


class ActingStates(Protocol):
    def acting_states(self) -> dict[str, dict[str, Any]]: ...  # every learner's ``policy_state``


class Collector(Protocol):
    def open(self, venue: Venue) -> None: ...  # the run's or a round's copies and matches

    def reset(self, seed: int) -> None: ...

    def collect(self, n_steps: int, env_steps: int) -> Collected: ...

    def cut_episodes(self) -> EpisodeStats: ...  # ends the episodes in flight (a round's end): their returns so far

    def sync(self, learners: ActingStates) -> None: ...  # the learners' networks after they learned

    def revive(self, env_steps: int) -> dict[str, np.ndarray]: ...  # restarts what died; its workers by policy

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> str | None: ...  # None, or why the copies cannot resume

    def close(self) -> None: ...


def restarted_workers(venue: Venue, copies: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    """Each policy's workers in the copies (first, count) that restarted."""
    if not copies:
        return {}
    found = {}
    for pid, where in compile_matches(venue.matches, venue.venv.groups, venue.venv.num_envs).items():
        restarted = np.zeros(where.n_workers, bool)
        for first, count in copies:
            restarted |= (where.worker_copy >= first) & (where.worker_copy < first + count)
        found[pid] = np.flatnonzero(restarted)
    return found


class LocalCollector:
    """The venue's copies stepped in this process by the policies themselves."""

    def __init__(self, policies: dict[str, Policy], timer: SectionTimer) -> None:
        self.policies = policies
        self.timer = timer
        self.rollout: Rollout | None = None
        self.venv: VectorEnv | None = None

    def open(self, venue: Venue) -> None:
        self.venv = venue.venv
        self.rollout = Rollout(venue.venv, self.policies, venue.matches, self.timer, env_check(venue.venv.groups))

    def reset(self, seed: int) -> None:
        assert self.rollout is not None, "open a venue first"
        self.rollout.reset(seed)

    def collect(self, n_steps: int, env_steps: int) -> Collected:
        assert self.rollout is not None and self.venv is not None, "open a venue first"
        steps = self.rollout.collect(n_steps, env_steps)
        return Collected(steps, self.venv.drain_episodes(), n_steps * self.venv.num_envs)

    def cut_episodes(self) -> EpisodeStats:
        assert self.venv is not None, "open a venue first"
        return self.venv.cut_episodes()

    def sync(self, learners: ActingStates) -> None:
        return None  # the policies act through the learners themselves

    def revive(self, env_steps: int) -> dict[str, np.ndarray]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        assert self.rollout is not None and self.venv is not None
        return {"env": self.venv.get_state(), "observed": [asdict(seen) for seen in self.rollout.observed or []], "carry": self.rollout.carry}

    def load_state_dict(self, state: dict[str, Any]) -> str | None:
        assert self.rollout is not None and self.venv is not None
        if state["env"] is None:
            return "the env's state cannot be saved in a checkpoint"
        try:
            self.venv.set_state(state["env"])
        except ValueError as error:  # e.g. saved by pursuit-pz's copies, resumed on the vectorised pursuit
            return f"the saved env state does not fit this env ({error})"
        self.rollout.observed = [GroupObs(**seen) for seen in state["observed"]]
        self.rollout.carry = state["carry"]
        return None

    def close(self) -> None:
        return None  # the venue's copies belong to whoever built them
