"""Evaluation episodes, stepped as a batch of env copies (one episode per copy) by the one
rollout."""

import numpy as np

from relayrl.arena.match import Match
from relayrl.arena.policy import Policy
from relayrl.arena.rollout import Rollout
from relayrl.envs.registry import EnvFactory
from relayrl.envs.vector_env import VectorEnv, make_vector_env


def evaluate(
    factory: EnvFactory, policies: dict[str, Policy], matches: list[Match], episodes: int, seed: int, venv: VectorEnv | None = None
) -> np.ndarray:
    """Runs ``episodes`` episodes at once (copy e seeded from ``seed`` and played by
    ``matches[e % len(matches)]``), the policies acting greedily, and returns each episode's reward summed over each group's
    entities, ``[episodes, n_groups]``. Where each agent runs its own episode (K copies of a
    single-agent env), every agent plays ``episodes`` episodes and each is a row:
    ``[episodes * K, 1]``. A given ``venv`` of ``episodes`` copies is reset and reused (and
    left open); else one is made and closed."""
    owned = venv is None
    venv = make_vector_env(factory, episodes) if venv is None else venv
    try:
        return Rollout(venv, policies, matches).episodes(seed)
    finally:
        if owned:
            venv.close()
