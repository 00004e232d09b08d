"""K copies of one single-agent Gymnasium environment as one K-agent environment.

DASE (paper 001, section 3; SPEC §1.2): agent k acts only in copy k, seeded seed + k, and
the agents share nothing but a replay. Each copy runs its own episodes: when copy k's
episode ends it is reset on its own (its ``next_obs`` keeps the final observation for
bootstrapping), and the finished episode is recorded for agent k. The copies form one
agent group ``[1, K, ...]``, so the learners above see the same interface as for Pursuit.
Observations are float32, the networks' precision (MuJoCo's float64 is rounded once, here).
"""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from relayrl.core.specs import GroupSpec
from relayrl.envs.pettingzoo_adapter import GroupStep
from relayrl.envs.vector_env import EpisodeStats


def _spec(env: gym.Env, n_agents: int, name: str) -> GroupSpec:
    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, spaces.Box):
        raise TypeError(f"K-copies envs need Box observations, got {obs_space}")
    ids = tuple(f"{name}_{k}" for k in range(n_agents))
    if isinstance(act_space, spaces.Discrete):
        return GroupSpec(name, ids, tuple(obs_space.shape), np.dtype(np.float32), int(act_space.n))
    if isinstance(act_space, spaces.Box):
        low, high = (tuple(float(v) for v in bound.reshape(-1)) for bound in (act_space.low, act_space.high))
        return GroupSpec(name, ids, tuple(obs_space.shape), np.dtype(np.float32), 0, tuple(act_space.shape), low, high)
    raise TypeError(f"K-copies envs need Discrete or Box actions, got {act_space}")


class GymCopiesEnv:
    """``n_agents`` copies of ``gym.make(env_id, **kwargs)``; a VectorEnv with E = 1."""

    num_envs = 1

    def __init__(self, env_id: str, n_agents: int, name: str = "agent", **kwargs: Any) -> None:
        if n_agents < 1:
            raise ValueError(f"need n_agents >= 1, got {n_agents}")
        self.env_id = env_id
        self.envs = [gym.make(env_id, **kwargs) for _ in range(n_agents)]
        spec = _spec(self.envs[0], n_agents, name)
        self.groups = (spec,)
        self._returns = np.zeros(n_agents)
        self._lengths = np.zeros(n_agents, np.int64)
        self._episodes = EpisodeStats()

    def _stack(self, values: list[np.ndarray]) -> np.ndarray:
        return np.stack(values).astype(np.float32)[None]

    def reset(self, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copy k is reset with seed ``seed + k`` (paper 001's seeding); later episodes
        continue each copy's own RNG."""
        obs = [env.reset(seed=seed + k)[0] for k, env in enumerate(self.envs)]
        self._returns[:] = 0
        self._lengths[:] = 0
        alive = np.ones((1, len(self.envs)), bool)
        return [self._stack(obs)], [alive]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]`` is ``[1, K, ...]``; copies whose episode ended are reset on their own."""
        n = len(self.envs)
        obs, next_obs = [], []
        reward = np.zeros(n, np.float32)
        terminated, truncated = np.zeros(n, bool), np.zeros(n, bool)
        for k, env in enumerate(self.envs):
            o, r, term, trunc, _ = env.step(actions[0][0, k])
            reward[k], terminated[k], truncated[k] = r, term, trunc
            self._returns[k] += r
            self._lengths[k] += 1
            next_obs.append(o)
            if term or trunc:
                self._episodes.returns.append(np.array([self._returns[k]]))
                self._episodes.lengths.append(int(self._lengths[k]))
                self._episodes.agents.append(k)
                self._returns[k], self._lengths[k] = 0, 0
                o, _ = env.reset()
            obs.append(o)
        step = GroupStep(
            self._stack(obs), self._stack(next_obs), reward[None], terminated[None], truncated[None], np.ones((1, n), bool)
        )
        return [step], np.zeros(1, bool)  # no joint episode: each copy resets on its own

    def drain_episodes(self) -> EpisodeStats:
        done, self._episodes = self._episodes, EpisodeStats()
        return done

    def get_state(self) -> bytes | None:
        return None  # simulator state is not copied: in-flight episodes restart on resume

    def set_state(self, state: bytes) -> None:
        raise ValueError("K-copies envs do not restore simulator state")

    def close(self) -> None:
        for env in self.envs:
            env.close()
