"""Corridor: a tiny PettingZoo env where sharing experience must help (used by tests).

N interchangeable runners, each in its own corridor of ``length`` cells, start at cell 0.
Actions: 0 = left, 1 = right. Reaching the last cell gives +1 and the runner leaves the
episode (terminated); everything else gives 0. The episode is truncated after
``max_steps``. ``n_walkers`` adds a second team, ``walker_i``, with the same rules: a
second agent group for multi-team tests (a team can be gone while the other plays on). With random exploration the reward is rare, so one runner's lucky
transition is worth much to the others: exactly the case SUPER relays. Its config section,
``corridor``, is here too.
"""

from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv
from pydantic import Field

from relayrl.core.strict import Strict
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection


class CorridorEnv(ParallelEnv):
    metadata = {"name": "corridor_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, n_agents: int = 4, length: int = 8, max_steps: int = 20, n_walkers: int = 0) -> None:
        if length < 2 or n_agents < 1 or max_steps < 1 or n_walkers < 0:
            raise ValueError("corridor needs length >= 2, n_agents >= 1, max_steps >= 1, n_walkers >= 0")
        self.length = length
        self.max_steps = max_steps
        self.possible_agents = [f"runner_{i}" for i in range(n_agents)] + [f"walker_{i}" for i in range(n_walkers)]
        self.agents: list[str] = []
        self._obs_space = spaces.Box(0.0, 1.0, (length,), np.float32)
        self._act_space = spaces.Discrete(2)
        self._position: dict[str, int] = {}
        self._steps = 0

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_space

    def _observe(self, agent: str) -> np.ndarray:
        obs = np.zeros(self.length, np.float32)
        obs[self._position[agent]] = 1.0
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._obs_space.seed(seed)
            self._act_space.seed(seed)
        self.agents = list(self.possible_agents)
        self._position = {a: 0 for a in self.agents}
        self._steps = 0
        return {a: self._observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        self._steps += 1
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for agent in self.agents:
            move = 1 if int(actions[agent]) == 1 else -1
            self._position[agent] = int(np.clip(self._position[agent] + move, 0, self.length - 1))
            reached = self._position[agent] == self.length - 1
            obs[agent] = self._observe(agent)
            rewards[agent] = 1.0 if reached else 0.0
            terms[agent] = reached
            truncs[agent] = self._steps >= self.max_steps and not reached
            infos[agent] = {}
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos

    def state_dict(self) -> dict[str, Any]:
        """The episode in flight, as data (what a checkpoint keeps to resume it exactly)."""
        return {"agents": list(self.agents), "position": dict(self._position), "steps": self._steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.agents, self._position, self._steps = list(state["agents"]), dict(state["position"]), state["steps"]

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass


class CorridorSettings(Strict):
    n_agents: int = Field(4, ge=1)
    length: int = Field(8, ge=2)
    max_steps: int = Field(20, ge=1)
    n_walkers: int = Field(0, ge=0, description="a second team of the same runners (multi-team tests)")


class CorridorSection(EnvSection):
    name: Literal["corridor"] = "corridor"
    settings: CorridorSettings = CorridorSettings()

    def group_names(self) -> list[str]:
        return ["runner", "walker"] if self.settings.n_walkers else ["runner"]


ENVS.add("corridor", EnvEntry(lambda settings: EnvFactory(CorridorEnv, dict(settings), {"runner": "uint8", "walker": "uint8"}), CorridorSection))
