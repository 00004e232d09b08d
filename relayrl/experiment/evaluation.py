"""Evaluation episodes, stepped as a batch of env copies (one episode per copy)."""

from collections.abc import Callable

import numpy as np

from relayrl.envs.registry import EnvFactory
from relayrl.envs.vector_env import VectorEnv, make_vector_env

Policy = Callable[[list[np.ndarray]], list[np.ndarray]]  # per team: obs [E, N, ...] -> actions [E, N]


def evaluate(factory: EnvFactory, policy: Policy, episodes: int, seed: int, venv: VectorEnv | None = None) -> np.ndarray:
    """Runs ``episodes`` episodes at once (copy e seeded from ``seed``) and returns each
    episode's reward summed over each team's entities, ``[episodes, n_teams]``. Where each
    agent runs its own episode (K copies of a single-agent env), every agent plays
    ``episodes`` episodes and each is a row: ``[episodes * K, 1]``. A given ``venv`` of
    ``episodes`` copies is reset and reused (and left open); else one is made and closed."""
    owned = venv is None
    venv = make_vector_env(factory, episodes) if venv is None else venv
    try:
        obs, _ = venv.reset(seed)
        if getattr(venv, "independent_episodes", False):
            return _evaluate_per_agent(venv, policy, obs)
        returns = np.zeros((episodes, len(venv.groups)))
        running = np.ones(episodes, bool)
        while running.any():
            steps, over = venv.step(policy(obs))
            returns += np.where(running[:, None], np.stack([s.reward.sum(axis=1) for s in steps], axis=1), 0.0)
            running &= ~over
            obs = [s.obs for s in steps]
        return returns
    finally:
        if owned:
            venv.close()


def _evaluate_per_agent(venv: VectorEnv, policy: Policy, obs: list[np.ndarray]) -> np.ndarray:
    """Each (copy, agent) counts its first episode only; copies that finished early keep
    stepping (auto-reset) until the last one ends, so the batch stays one array."""
    returns = np.zeros(obs[0].shape[:2])
    running = np.ones(obs[0].shape[:2], bool)
    while running.any():
        steps, _ = venv.step(policy(obs))
        step = steps[0]
        returns += np.where(running, step.reward, 0.0)
        running &= ~(step.terminated | step.truncated)
        obs = [s.obs for s in steps]
    return returns.reshape(-1, 1)
