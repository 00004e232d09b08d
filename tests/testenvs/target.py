"""A one-agent Gymnasium env that this module registers as ``Target-v0`` when imported:
an action in [0, 10], reward -(a - 7)^2 / 10, 10 steps an episode. Named by relayrl as
``testenvs.target:Target-v0``, the form ``gymnasium.make`` takes."""

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class TargetEnv(gym.Env):
    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Box(0.0, 10.0, (1,), np.float32)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = -float((np.asarray(action, np.float64)[0] - 7.0) ** 2) / 10
        return np.zeros(2, np.float32), reward, False, self.t >= 10, {}


gym.register("Target-v0", entry_point=TargetEnv)
