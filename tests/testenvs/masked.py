"""A PettingZoo Parallel env with a global state and action masks (PettingZoo's Dict
observation of ``observation`` and ``action_mask``): each step allows 2 of 4 actions per
agent at random, and a disallowed action is an error, so a run that finishes acted
within the masks. Reward 1 for action 0 when allowed. With ``stuck_at``, the last agent's
mask allows nothing from that step of an episode on (an env's bug). Loaded by module path as
``testenvs.masked``."""

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class MaskedEnv(ParallelEnv):
    metadata = {"name": "masked_v0"}

    def __init__(self, n_agents: int = 2, max_cycles: int = 10, stuck_at: int | None = None) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.max_cycles = max_cycles
        self.stuck_at = stuck_at
        self.state_space = spaces.Box(0, 1, (4 * n_agents + 1,), np.float32)
        self.rng = np.random.default_rng(0)

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        return spaces.Dict({"observation": spaces.Box(0, 1, (4,), np.float32), "action_mask": spaces.MultiBinary(4)})

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return spaces.Discrete(4)

    def _draw(self) -> None:
        self.masks = {a: np.zeros(4, np.int8) for a in self.agents}
        for mask in self.masks.values():
            mask[self.rng.choice(4, 2, replace=False)] = 1
        if self.stuck_at is not None and self.t >= self.stuck_at:
            self.masks[self.possible_agents[-1]][:] = 0

    def _obs(self):
        return {a: {"observation": self.masks[a].astype(np.float32), "action_mask": self.masks[a].copy()} for a in self.agents}

    def state(self) -> np.ndarray:
        parts = [self.masks[a] if a in self.agents else np.zeros(4) for a in self.possible_agents]
        return np.concatenate([*parts, [self.t / self.max_cycles]]).astype(np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        self._draw()  # after t is set: stuck_at counts from the episode's start
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        for agent, action in actions.items():
            if not self.masks[agent][action]:
                raise ValueError(f"{agent} took action {action}, which its mask {self.masks[agent]} forbids")
        rewards = {a: float(actions[a] == 0) for a in self.agents}
        self.t += 1
        done = self.t >= self.max_cycles
        terms = {a: False for a in self.agents}
        truncs = {a: done for a in self.agents}
        self._draw()
        obs = self._obs()
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos


def parallel_env(**kwargs) -> MaskedEnv:
    return MaskedEnv(**kwargs)
