"""A PettingZoo Parallel env with the spaces users write: ``Discrete(3, start=1)`` actions
(an action outside 1..3 is an error; reward 1 for action 1), or Box actions without bounds
(``actions="unbounded"``), or ``MultiDiscrete([3, 2], start=[1, 0])`` (``actions="choices"``:
reward 1 for the choices (3, 0)), observations of ``obs_shape`` (zeros but for the first number), and
with ``wrong_obs`` observations one number longer than its observation space says; with
``mask_in_infos`` action masks in its infos. Loaded by module path as ``testenvs.spaces``."""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class SpacesEnv(ParallelEnv):
    metadata = {"name": "spaces_v0"}

    def __init__(self, actions: str = "start", wrong_obs: bool = False, max_cycles: int = 10, obs_shape: tuple[int, ...] = (4,),
                 mask_in_infos: bool = False) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.actions, self.wrong_obs, self.max_cycles, self.obs_shape = actions, wrong_obs, max_cycles, tuple(obs_shape)
        self.mask_in_infos = mask_in_infos

    def observation_space(self, agent):
        return spaces.Box(-1, 1, self.obs_shape, np.float32)

    def action_space(self, agent):
        if self.actions == "choices":
            return spaces.MultiDiscrete([3, 2], start=[1, 0])
        return spaces.Discrete(3, start=1) if self.actions == "start" else spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def _obs(self):
        if self.wrong_obs:
            return {a: np.zeros(np.prod(self.obs_shape) + 1, np.float32) for a in self.agents}
        obs = np.zeros(self.obs_shape, np.float32)
        obs.flat[0] = self.t / self.max_cycles
        return {a: obs.copy() for a in self.agents}

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {a: {"action_mask": np.ones(3, np.int8)} if self.mask_in_infos else {} for a in self.agents}

    def step(self, actions):
        if self.actions == "start":
            for agent, action in actions.items():
                if not 1 <= action <= 3:
                    raise ValueError(f"{agent} took action {action}; Discrete(3, start=1) has 1, 2 and 3")
        if self.actions == "choices":
            for agent, action in actions.items():
                if not self.action_space(agent).contains(np.asarray(action, np.int64)):
                    raise ValueError(f"{agent} took action {action}, outside {self.action_space(agent)}")
            rewards = {a: float(tuple(np.asarray(actions[a]).tolist()) == (3, 0)) for a in self.agents}
        else:
            rewards = {a: float(actions[a] == 1) if self.actions == "start" else 0.0 for a in self.agents}
        self.t += 1
        obs = self._obs()
        truncs = {a: self.t >= self.max_cycles for a in self.agents}
        infos = {a: {} for a in self.agents}
        if self.t >= self.max_cycles:
            self.agents = []
        return obs, rewards, {a: False for a in truncs}, truncs, infos


def parallel_env(**kwargs) -> SpacesEnv:
    return SpacesEnv(**kwargs)
