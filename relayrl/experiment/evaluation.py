"""Evaluation episodes, stepped as a batch of env copies (one episode per copy)."""

from collections.abc import Callable

import numpy as np

from relayrl.envs.registry import EnvFactory
from relayrl.envs.vector_env import make_vector_env

Policy = Callable[[np.ndarray], np.ndarray]  # obs [E, N, ...] -> actions [E, N]


def evaluate(factory: EnvFactory, policy: Policy, episodes: int, seed: int) -> np.ndarray:
    """Runs ``episodes`` episodes at once (copy e seeded from ``seed``) and returns each
    episode's reward summed over the group's entities, ``[episodes]``."""
    venv = make_vector_env(factory, episodes)
    try:
        if len(venv.groups) != 1:
            raise ValueError(f"evaluate() drives one agent group; this env has {len(venv.groups)}")
        obs, _ = venv.reset(seed)
        returns = np.zeros(episodes)
        running = np.ones(episodes, bool)
        while running.any():
            steps, over = venv.step([policy(obs[0])])
            returns += np.where(running, steps[0].reward.sum(axis=1), 0.0)
            running &= ~over
            obs = [steps[0].obs]
        return returns
    finally:
        venv.close()


def random_policy(n_actions: int, seed: int) -> Policy:
    """Uniformly random actions: the baseline trained agents must beat."""
    rng = np.random.default_rng(seed)
    return lambda obs: rng.integers(0, n_actions, obs.shape[:2])
