"""One-agent Gymnasium envs that this module registers when imported: ``Target-v0``, an
action in [0, 10], reward -(a - 7)^2 / 10, 10 steps an episode; ``Choices-v0`` (below), of
MultiDiscrete or Discrete(n, start) actions; ``TupleChoices-v0``, two agents with Tuple
spaces of MultiDiscrete actions. Named by relayrl as
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


class ChoicesEnv(TargetEnv):
    """``Choices-v0``: ``Target-v0``'s observations and episodes of 10 steps;
    with ``kind="multi"`` actions ``MultiDiscrete([3, 2], start=[1, 0])``, reward 1 for the
    choices (3, 0); with ``kind="start"`` actions ``Discrete(3, start=1)``, reward 1 for 1.
    Out-of-range actions are errors."""

    def __init__(self, kind: str = "multi") -> None:
        super().__init__()
        self.kind = kind
        self.action_space = spaces.MultiDiscrete([3, 2], start=[1, 0]) if kind == "multi" else spaces.Discrete(3, start=1)

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, np.int64) if self.kind == "multi" else int(action)):
            raise ValueError(f"action {action} is outside {self.action_space}")
        self.t += 1
        rewarded = tuple(np.asarray(action).tolist()) == (3, 0) if self.kind == "multi" else int(action) == 1
        return np.zeros(2, np.float32), float(rewarded), False, self.t >= 10, {}


gym.register("Choices-v0", entry_point=ChoicesEnv)


class TupleChoicesEnv(gym.Env):
    """Two agents with Tuple spaces (the multi-agent form of LBF and RWARE): each takes
    ``MultiDiscrete([3, 2], start=[1, 0])`` choices, reward 1 each step for the choices (3,
    0), 10 steps an episode; a choice outside the space is an error."""

    def __init__(self) -> None:
        self.observation_space = spaces.Tuple([spaces.Box(-1.0, 1.0, (3,), np.float32)] * 2)
        self.action_space = spaces.Tuple([spaces.MultiDiscrete([3, 2], start=[1, 0])] * 2)
        self.t = 0

    def _obs(self) -> tuple:
        return tuple(np.full(3, self.t / 10, np.float32) for _ in range(2))

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        for choices in action:
            if not self.action_space[0].contains(np.asarray(choices, np.int64)):
                raise ValueError(f"choices {choices} outside {self.action_space[0]}")
        self.t += 1
        rewards = [float(tuple(np.asarray(choices).tolist()) == (3, 0)) for choices in action]
        return self._obs(), rewards, False, self.t >= 10, {}


gym.register("TupleChoices-v0", entry_point=TupleChoicesEnv)
