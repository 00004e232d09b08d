"""One game of a batched built-in env behind PettingZoo's Parallel API: the vector env with
one copy does the work; a face gives its spaces, its observations and how a step is taken
(``predator-prey-pz``, ``cooperative-navigation``)."""

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv


class OneGameParallelEnv(ParallelEnv):
    """The parts every face shares: one observation and one action space for all agents,
    ``state()``, ``reset`` and the end of ``step`` (every agent's episode ends together)."""

    game: Any  # the vector env with one copy
    _observation_space: spaces.Space
    _action_space: spaces.Space

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def _observations(self) -> dict[str, Any]:
        raise NotImplementedError

    def state(self) -> np.ndarray:
        return self.game.state()[0]

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.game.reset(int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is not None else 0)
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def _stepped(self, reward: float, terminated: bool, truncated: bool):
        """``step``'s five dicts for the agents of the step; an ended episode has none left."""
        agents = self.agents
        self.agents = [] if terminated or truncated else agents
        return (
            self._observations(),
            {a: reward for a in agents},
            {a: terminated for a in agents},
            {a: truncated for a in agents},
            {a: {} for a in agents},
        )
