"""Evaluation episodes, stepped as a batch of env copies (one episode per copy)."""

from collections.abc import Callable

import numpy as np

from relayrl.envs.registry import EnvFactory
from relayrl.envs.vector_env import make_vector_env

Policy = Callable[[list[np.ndarray]], list[np.ndarray]]  # per team: obs [E, N, ...] -> actions [E, N]


def evaluate(factory: EnvFactory, policy: Policy, episodes: int, seed: int) -> np.ndarray:
    """Runs ``episodes`` episodes at once (copy e seeded from ``seed``) and returns each
    episode's reward summed over each team's entities, ``[episodes, n_teams]``."""
    venv = make_vector_env(factory, episodes)
    try:
        obs, _ = venv.reset(seed)
        returns = np.zeros((episodes, len(venv.groups)))
        running = np.ones(episodes, bool)
        while running.any():
            steps, over = venv.step(policy(obs))
            returns += np.where(running[:, None], np.stack([s.reward.sum(axis=1) for s in steps], axis=1), 0.0)
            running &= ~over
            obs = [s.obs for s in steps]
        return returns
    finally:
        venv.close()


def random_policy(n_actions: list[int], seed: int) -> Policy:
    """Uniformly random actions for every team: the baseline trained agents must beat."""
    rng = np.random.default_rng(seed)
    return lambda obs: [rng.integers(0, n, o.shape[:2]) for n, o in zip(n_actions, obs)]
