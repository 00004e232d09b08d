"""A PettingZoo Parallel env whose agents' names do not group them: ``alice``, ``bob`` and
``carol`` (observations of 4 numbers, 3 actions each; ``carol_wide``: carol sees 6), each
rewarded 1 for action 2, with a global ``state()`` of 3 numbers. Loaded by module path as
``testenvs.named``."""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class NamedEnv(ParallelEnv):
    metadata = {"name": "named_v0"}

    def __init__(self, carol_wide: bool = False, max_cycles: int = 10) -> None:
        self.possible_agents = ["alice", "bob", "carol"]
        self.sizes = {"alice": 4, "bob": 4, "carol": 6 if carol_wide else 4}
        self.max_cycles = max_cycles
        self.state_space = spaces.Box(0.0, 1.0, (3,), np.float32)

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (self.sizes[agent],), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def _obs(self):
        return {a: np.full(self.sizes[a], self.t / self.max_cycles, np.float32) for a in self.agents}

    def state(self):
        return np.full(3, self.t / self.max_cycles, np.float32)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        rewards = {a: float(actions[a] == 2) for a in self.agents}
        obs, over = self._obs(), self.t >= self.max_cycles
        truncs = {a: over for a in self.agents}
        if over:
            self.agents = []
        return obs, rewards, {a: False for a in truncs}, truncs, {a: {} for a in truncs}


def parallel_env(**kwargs):
    return NamedEnv(**kwargs)
