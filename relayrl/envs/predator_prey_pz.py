"""The stag hunt's PettingZoo face and its config section (SPEC §1.3): one game behind
PettingZoo's Parallel API (``predator-prey-pz``), and the entries that build it, or E games
as arrays (``relayrl.envs.predator_prey``, ``predator-prey``), by name."""

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pydantic import model_validator

from relayrl.envs.one_game import OneGameParallelEnv
from relayrl.envs.predator_prey import STAY, Draws, PredatorPreySettings, PredatorPreyVectorEnv
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection


class PredatorPreyParallelEnv(OneGameParallelEnv):
    """One game behind PettingZoo's Parallel API: Dict observations of ``observation`` and
    ``action_mask``, ``state()`` the whole grid; the episode ends for every predator at once."""

    metadata = {"name": "predator_prey_v0", "render_modes": []}

    def __init__(self, **settings: Any) -> None:
        self.game = PredatorPreyVectorEnv(1, **settings)
        (spec,) = self.game.groups
        self.possible_agents = list(spec.agent_ids)
        self.agents: list[str] = []
        side = 2 * self.game.s.view + 1
        self._observation_space = spaces.Dict(
            {"observation": spaces.Box(-1, 1, (side, side, 3), np.int8), "action_mask": spaces.Box(0, 1, (6,), np.int8)}
        )
        self._action_space = spaces.Discrete(6)
        self.state_space = spaces.Box(0, 1, (self.game.state_size,), np.int8)

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        obs, mask = self.game.observe()[0], self.game.action_mask()[0].astype(np.int8)
        return {a: {"observation": obs[i], "action_mask": mask[i]} for i, a in enumerate(self.possible_agents)}

    def step(self, actions: dict[str, int]):
        game = self.game
        chosen = np.array([[actions.get(a, STAY) for a in self.possible_agents]], np.int64)
        team, terminated = game._advance(chosen, Draws.sample(game.rng, 1, game.N, game.M))
        game.frames += 1
        truncated = bool(game.frames[0] >= game.s.max_cycles and not terminated[0])
        return self._stepped(float(team[0]) / game.N, bool(terminated[0]), truncated)


class PredatorPreySection(EnvSection):
    """``predator-prey`` runs E games as arrays, ``predator-prey-pz`` one PettingZoo env per
    game, with the same dynamics."""

    name: Literal["predator-prey", "predator-prey-pz"] = "predator-prey"
    settings: PredatorPreySettings = PredatorPreySettings()

    @model_validator(mode="after")
    def _vector_kind(self) -> "PredatorPreySection":
        if self.name == "predator-prey" and self.vector != "sync":
            raise ValueError("the vectorised predator-prey runs in-process; vector=subproc needs env.name=predator-prey-pz")
        return self

    def group_names(self) -> list[str]:
        return ["predator"]


def _factory(vectorised: bool) -> Callable[[dict[str, Any]], EnvFactory]:
    return lambda settings: EnvFactory(PredatorPreyParallelEnv, dict(settings), {"predator": "int8"}, PredatorPreyVectorEnv if vectorised else None)


ENVS.add("predator-prey", EnvEntry(_factory(vectorised=True), PredatorPreySection))
ENVS.add("predator-prey-pz", EnvEntry(_factory(vectorised=False), PredatorPreySection))
