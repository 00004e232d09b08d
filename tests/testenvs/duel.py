"""Two teams of two in a zero-sum game: every step each agent plays rock, paper or scissors
against the agent of the same index on the other team (+1 for a win, -1 for a loss) and
then sees that agent's move; the state is every agent's last move. 10 steps an episode.
Loaded by module path as ``testenvs.duel``."""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class DuelEnv(ParallelEnv):
    metadata = {"name": "duel_v0"}

    def __init__(self, max_cycles: int = 10) -> None:
        self.possible_agents = ["blue_0", "blue_1", "red_0", "red_1"]
        self.max_cycles = max_cycles
        self.state_space = spaces.Box(0, 1, (12,), np.float32)

    def observation_space(self, agent):
        return spaces.Box(0, 1, (3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def state(self):
        return np.eye(3, dtype=np.float32)[self.moves].reshape(-1) * (self.t > 0)

    def reset(self, seed=None, options=None):
        self.agents, self.t, self.moves = list(self.possible_agents), 0, np.zeros(4, int)
        return {a: np.zeros(3, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.moves = np.array([int(actions[a]) for a in self.possible_agents])
        blue_wins = (self.moves[:2] - self.moves[2:]) % 3  # 1: blue's agent wins, 2: red's
        blue = np.where(blue_wins == 1, 1.0, np.where(blue_wins == 2, -1.0, 0.0))
        rewards = dict(zip(self.possible_agents, [*blue, *-blue]))
        seen = np.eye(3, dtype=np.float32)[np.concatenate([self.moves[2:], self.moves[:2]])]
        obs = dict(zip(self.possible_agents, seen))
        self.t += 1
        truncs = {a: self.t >= self.max_cycles for a in self.agents}
        if self.t >= self.max_cycles:
            self.agents = []
        return obs, rewards, {a: False for a in truncs}, truncs, {a: {} for a in truncs}


def parallel_env(**kwargs) -> DuelEnv:
    return DuelEnv(**kwargs)
