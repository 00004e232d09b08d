"""A PettingZoo Parallel env whose two agents see small screens: random 8-bit images
``6 x 6 x 2`` (``side`` x ``side`` x 2) drawn from the reset's seed, declared as a uint8 Box from 0 to 255; with
``scaled`` the same images divided by 255 as float32 in a Box from 0 to 1 (what the
networks should read either way). Discrete actions (reward 1 where the action says whether
the screen's first pixel is bright) or, with ``actions="box"``, one number in [-1, 1]
(reward minus its distance to that). ``state()``: both screens side by side, as bytes in a
uint8 Box from 0 to 255, or with ``scaled`` as float32 in [0, 1].
Loaded by module path as ``testenvs.screens``."""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

SHAPE = (6, 6, 2)


class ScreensEnv(ParallelEnv):
    metadata = {"name": "screens_v0"}

    def __init__(self, scaled: bool = False, actions: str = "discrete", max_cycles: int = 12, side: int = SHAPE[0]) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.scaled, self.actions, self.max_cycles = scaled, actions, max_cycles
        self.shape = (side, side, SHAPE[2])
        size = 2 * int(np.prod(self.shape))
        self.state_space = spaces.Box(0.0, 1.0, (size,), np.float32) if scaled else spaces.Box(0, 255, (size,), np.uint8)
        self.rng = np.random.default_rng(0)

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, self.shape, np.float32) if self.scaled else spaces.Box(0, 255, self.shape, np.uint8)

    def action_space(self, agent):
        return spaces.Discrete(2) if self.actions == "discrete" else spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _draw(self) -> None:
        self.screens = self.rng.integers(0, 256, (2, *self.shape), dtype=np.uint8)

    def _obs(self):
        if self.scaled:
            return {a: self.screens[i].astype(np.float32) / np.float32(255) for i, a in enumerate(self.agents)}
        return {a: self.screens[i].copy() for i, a in enumerate(self.agents)}

    def state(self):
        return self.screens.reshape(-1).astype(np.float32) / np.float32(255) if self.scaled else self.screens.reshape(-1).copy()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        self._draw()
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        bright = self.screens[:, 0, 0, 0] > 127
        if self.actions == "discrete":
            rewards = {a: float(int(actions[a]) == int(bright[i])) for i, a in enumerate(self.agents)}
        else:
            rewards = {a: -abs(float(np.asarray(actions[a]).reshape(-1)[0]) - float(bright[i])) for i, a in enumerate(self.agents)}
        self.t += 1
        self._draw()
        obs = self._obs()
        truncs = {a: self.t >= self.max_cycles for a in self.agents}
        if self.t >= self.max_cycles:
            self.agents = []
        return obs, rewards, {a: False for a in truncs}, truncs, {a: {} for a in truncs}


def parallel_env(**kwargs) -> ScreensEnv:
    return ScreensEnv(**kwargs)


def _gym_classes():
    """Random screens as Gymnasium envs: one agent (for K copies of a single-agent env) or two
    with Tuple spaces (a multi-agent env by its Gymnasium id, channel-first as the warehouse's
    images come)."""
    import gymnasium as gym

    class Screen(gym.Env):
        observation_space = spaces.Box(0, 255, SHAPE, np.uint8)
        action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.np_random.integers(0, 256, SHAPE, dtype=np.uint8), {}

        def step(self, action):
            return self.np_random.integers(0, 256, SHAPE, dtype=np.uint8), 0.0, False, False, {}

    class Screens(gym.Env):
        observation_space = spaces.Tuple([spaces.Box(0, 255, (2, 6, 6), np.uint8)] * 2)
        action_space = spaces.Tuple([spaces.Discrete(2)] * 2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return tuple(self.np_random.integers(0, 256, (2, 2, 6, 6), dtype=np.uint8)), {}

        def step(self, action):
            return tuple(self.np_random.integers(0, 256, (2, 2, 6, 6), dtype=np.uint8)), [0.0, 0.0], False, False, {}

    return Screen, Screens


def register_gym() -> tuple[str, str]:
    """Registers the two Gymnasium screens envs (once); returns their ids."""
    import gymnasium as gym

    if "relayrl-tests/Screen-v0" not in gym.registry:
        screen, screens = _gym_classes()
        gym.register("relayrl-tests/Screen-v0", entry_point=screen, max_episode_steps=10)
        gym.register("relayrl-tests/Screens-v0", entry_point=screens, max_episode_steps=10)
    return "relayrl-tests/Screen-v0", "relayrl-tests/Screens-v0"


SCREEN_ID, SCREENS_ID = register_gym()  # on import, so that "testenvs.screens:<id>" names them
