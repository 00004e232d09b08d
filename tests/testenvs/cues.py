"""A PettingZoo Parallel env whose observations are not Boxes: each agent sees a cue of 3
(``observation="discrete"``: Discrete(3); ``"dict"``: a Dict of the cue and two numbers of
noise; ``"tuple"``: the same as a Tuple) and earns 1 for the action equal to its cue; new
cues every step, 10 steps an episode. Loaded by module path as ``testenvs.cues``."""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class CuesEnv(ParallelEnv):
    metadata = {"name": "cues_v0"}

    def __init__(self, observation: str = "discrete", max_cycles: int = 10) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.observation, self.max_cycles = observation, max_cycles
        cue, noise = spaces.Discrete(3), spaces.Box(-1, 1, (2,), np.float32)
        self._space = {"discrete": cue, "dict": spaces.Dict({"cue": cue, "noise": noise}), "tuple": spaces.Tuple((noise, cue))}[observation]

    def observation_space(self, agent):
        return self._space

    def action_space(self, agent):
        return spaces.Discrete(3)

    def _obs(self):
        self.cues = self.rng.integers(0, 3, len(self.agents))
        noise = self.rng.uniform(-1, 1, (len(self.agents), 2)).astype(np.float32)
        if self.observation == "discrete":
            return {a: int(c) for a, c in zip(self.agents, self.cues)}
        if self.observation == "dict":
            return {a: {"cue": int(c), "noise": n} for a, c, n in zip(self.agents, self.cues, noise)}
        return {a: (n, int(c)) for a, c, n in zip(self.agents, self.cues, noise)}

    def reset(self, seed=None, options=None):
        if seed is not None or not hasattr(self, "rng"):  # later episodes go on with the seeded stream
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        rewards = {a: float(actions[a] == c) for a, c in zip(self.agents, self.cues)}
        self.t += 1
        obs = self._obs()
        truncs = {a: self.t >= self.max_cycles for a in self.agents}
        if self.t >= self.max_cycles:
            self.agents = []
        return obs, rewards, {a: False for a in truncs}, truncs, {a: {} for a in truncs}


def parallel_env(**kwargs) -> CuesEnv:
    return CuesEnv(**kwargs)
