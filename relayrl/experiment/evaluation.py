"""Evaluation episodes, stepped as a batch of env copies (one episode per copy) by the one
rollout: greedy evaluations during a run, and the comparison of a trained group against a
uniformly random one."""

import dataclasses
import sys

import numpy as np

from relayrl.arena.collect import Venue
from relayrl.arena.match import Match, replace_group
from relayrl.arena.policy import Policy, RandomPolicy
from relayrl.arena.rollout import Rollout
from relayrl.envs.frames import Filmed
from relayrl.envs.registry import EnvFactory
from relayrl.envs.vector_env import VectorEnv, make_vector_env


def evaluate(
    factory: EnvFactory,
    policies: dict[str, Policy],
    matches: list[Match],
    episodes: int,
    seed: int,
    venv: VectorEnv | None = None,
    max_steps: int | None = None,
    env_steps: int | None = None,
) -> tuple[np.ndarray, int]:
    """Runs ``episodes`` episodes at once (copy e seeded from ``seed`` and played by
    ``matches[e % len(matches)]``), the policies acting greedily (with ``env_steps``: as
    training acts at that step), and returns each episode's reward summed over each group's
    entities, ``[episodes, n_groups]``. Where each agent runs its own episode (K copies of a
    single-agent env), every agent plays ``episodes`` episodes and each is a row:
    ``[episodes * K, 1]``. Episodes still running after ``max_steps`` steps are cut and
    count with their returns so far; the second value is how many were cut. A given
    ``venv`` of ``episodes`` copies is reset and reused (and left open); else one is made
    and closed."""
    owned = venv is None
    venv = make_vector_env(factory, episodes) if venv is None else venv
    try:
        return Rollout(venv, policies, matches).episodes(seed, max_steps, env_steps)
    finally:
        if owned:
            venv.close()


class Evaluator:
    """Greedy evaluations of a run's policies, with the policies only evaluations play
    (``eval.policies``, a held-out opponent) on the matches ``eval.match`` gives (default:
    the venue's), every evaluation reset with ``seed``."""

    def __init__(
        self, policies: dict[str, Policy], held_out: dict[str, Policy], matches: list[Match], seed: int, max_steps: int | None = None
    ) -> None:
        self.policies = {**policies, **held_out}  # acting greedily: frozen ones with their own small exploration
        self.matches = matches
        self.max_steps = max_steps
        self.cut_said = False
        self.seed = seed
        self.venue: Venue | None = None
        self.venv: VectorEnv | None = None  # kept between evaluations where building copies is costly

    def open(self, venue: Venue) -> None:
        """Evaluates on the venue's env (and its matches, where ``eval.match`` is not given)."""
        if self.venue is None or venue.factory is not self.venue.factory:
            self.close()
        self.venue = venue

    def greedy(self, episodes: int) -> np.ndarray:
        """Greedy episodes ``[episodes, n_groups]``: each group's reward summed over its
        entities; for K copies of a single-agent env, each agent's ``episodes`` episodes
        without exploration noise, ``[episodes * K, 1]`` (paper 001, C.6)."""
        return self.play(episodes)

    def play(self, episodes: int, env_steps: int | None = None) -> np.ndarray:
        """``greedy``'s episodes, or with ``env_steps`` the learning policies acting as
        training acts at that step (sampled actions, DQN's epsilon then)."""
        assert self.venue is not None, "open a venue first"
        matches = self.matches or self.venue.matches
        if not self.venue.venv.independent_episodes:
            return self._episodes(self.policies, matches, episodes, env_steps=env_steps)
        # Gymnasium copies are kept between evaluations: building MuJoCo models costs more
        # than it does for the other envs, and a reset with the same seeds restarts them alike
        if self.venv is None or self.venv.num_envs != episodes:
            self.close()
            self.venv = make_vector_env(self.venue.factory, episodes)
        return self._episodes(self.policies, matches, episodes, self.venv, env_steps)

    def film(self, env_steps: int | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """One game of ``play``'s (an evaluation of one episode, from this evaluator's seed)
        drawn after every step (``Filmed``), and its returns ``[1, n_groups]``."""
        assert self.venue is not None, "open a venue first"
        factory = dataclasses.replace(self.venue.factory, render_mode="rgb_array")
        filmed = Filmed(make_vector_env(factory, 1))
        try:
            returns = self._episodes(self.policies, self.matches or self.venue.matches, 1, filmed, env_steps)
        finally:
            filmed.venv.close()
        return filmed.frames, returns

    def against_random(self, episodes: int, group: int, env_steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Group ``group``'s rewards (``play``'s), and the same group's acting uniformly at
        random (the other groups acting as in ``play`` in both): ``[episodes]`` each."""
        assert self.venue is not None, "open a venue first"
        trained = self.play(episodes, env_steps)[:, group]
        spec = self.venue.venv.groups[group]
        policies = {**self.policies, "random baseline": RandomPolicy(spec, self.seed)}
        matches = replace_group(self.venue.matches, spec.name, "random baseline")
        return trained, self._episodes(policies, matches, episodes, env_steps=env_steps)[:, group]

    def _episodes(
        self, policies: dict[str, Policy], matches: list[Match], episodes: int, venv: VectorEnv | None = None, env_steps: int | None = None
    ) -> np.ndarray:
        """``evaluate`` from this evaluator's seed, its episodes cut at ``max_steps``; the first
        time some were cut, a note that says so."""
        assert self.venue is not None, "open a venue first"
        returns, cut = evaluate(self.venue.factory, policies, matches, episodes, self.seed, venv, self.max_steps, env_steps)
        if cut and not self.cut_said:
            self.cut_said = True
            print(f"note: {cut} evaluation episode(s) still ran after eval.max_episode_steps={self.max_steps} steps (does the env set no "
                  "time limit?) and were cut there: their returns so far count; raise eval.max_episode_steps to play them longer", file=sys.stderr)
        return returns

    def close(self) -> None:
        if self.venv is not None:
            self.venv.close()
            self.venv = None
