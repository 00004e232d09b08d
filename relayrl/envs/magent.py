"""MAgent2 Battle and Adversarial-Pursuit with the SUPER paper's settings (paper 000,
Appendix B.1 and Tables 3-4; SPEC §3).

Battle on an 18x18 map gives 6 red v 6 blue (13x13x5 observations, 21 actions); agents
that are killed leave the episode. Adversarial-Pursuit on an 18x18 map gives 4 predators
(10x10x5, 13 actions) and 8 prey (9x9x5, 9 actions); prey are never removed. Each team is
one agent group. Versions: magent2 0.3.4 with pettingzoo 1.27.0 (the ``magent`` extra).
Their config sections, ``battle`` and ``adversarial-pursuit``, are here too.
"""

from typing import Any, Literal

import numpy as np
from pettingzoo.utils.env import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper
from pydantic import Field

from relayrl.core.errors import MissingExtraError
from relayrl.core.strict import Strict
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection

# Paper 000, Table 3 (Battle) and Table 4 (Adversarial Pursuit).
BATTLE_SETTINGS: dict[str, Any] = {
    "map_size": 18,
    "max_cycles": 1000,
    "minimap_mode": False,
    "extra_features": False,
    "step_reward": -0.005,
    "dead_penalty": -0.1,
    "attack_penalty": -0.1,
    "attack_opponent_reward": 0.2,
}
ADVERSARIAL_PURSUIT_SETTINGS: dict[str, Any] = {
    "map_size": 18,
    "max_cycles": 500,
    "minimap_mode": False,
    "extra_features": False,
    "tag_penalty": -0.2,
}


def _checked(settings: dict[str, Any], defaults: dict[str, Any], name: str) -> dict[str, Any]:
    unknown = set(settings) - set(defaults)
    if unknown:
        raise ValueError(f"unknown {name} settings {sorted(unknown)}; allowed: {sorted(defaults)}")
    return {**defaults, **settings}


class WholeState(BaseParallelWrapper):
    """MAgent2's global state, also once a team has no living agent: magent2 0.3.4's
    ``state()`` unpacks every team's positions and raises on an empty team (a battle won
    before the time limit). Then this builds the same planes itself: the map's walls, and
    per team a presence plane and a plane of each agent's hit points (the centre cell of its
    own view), an emptied team's planes left at zero."""

    def state(self) -> np.ndarray:
        game = self.env.unwrapped
        if all(len(game.env.get_pos(handle)) for handle in game.handles):
            return self.env.state()
        if game.extra_features:
            raise ValueError("the state of a MAgent2 env with extra_features=True and an emptied team is not available")
        state = np.copy(game.base_state)
        for handle in game.handles:
            pos = np.asarray(game.env.get_pos(handle)).reshape(-1, 2)
            if len(pos):
                view, _ = game.env.get_observation(handle)
                state[pos[:, 0], pos[:, 1], 1 + 2 * handle.value] = 1
                state[pos[:, 0], pos[:, 1], 2 + 2 * handle.value] = view[:, view.shape[1] // 2, view.shape[2] // 2, 2]
        return state


def make_battle(render_mode: str | None = None, **settings: Any) -> ParallelEnv:
    """A battle_v4 parallel env; ``settings`` override BATTLE_SETTINGS key by key."""
    try:
        from magent2.environments import battle_v4
    except ImportError as error:
        raise MissingExtraError("magent2", "magent") from error
    return WholeState(battle_v4.parallel_env(**_checked(settings, BATTLE_SETTINGS, "battle"), render_mode=render_mode))


def make_adversarial_pursuit(render_mode: str | None = None, **settings: Any) -> ParallelEnv:
    """An adversarial_pursuit_v4 parallel env; ``settings`` override ADVERSARIAL_PURSUIT_SETTINGS."""
    try:
        from magent2.environments import adversarial_pursuit_v4
    except ImportError as error:
        raise MissingExtraError("magent2", "magent") from error
    return WholeState(adversarial_pursuit_v4.parallel_env(**_checked(settings, ADVERSARIAL_PURSUIT_SETTINGS, "adversarial-pursuit"), render_mode=render_mode))


class BattleSettings(Strict):
    """magent2 battle_v4 settings; defaults are the SUPER paper's (Table 3): 18x18 gives 6 v 6."""

    map_size: int = Field(18, ge=12)
    max_cycles: int = Field(1000, ge=1)
    minimap_mode: bool = False
    extra_features: bool = False
    step_reward: float = -0.005
    dead_penalty: float = -0.1
    attack_penalty: float = -0.1
    attack_opponent_reward: float = 0.2


class AdversarialPursuitSettings(Strict):
    """magent2 adversarial_pursuit_v4 settings; defaults are the SUPER paper's (Table 4):
    18x18 gives 4 predators and 8 prey."""

    map_size: int = Field(18, ge=7)
    max_cycles: int = Field(500, ge=1)
    minimap_mode: bool = False
    extra_features: bool = False
    tag_penalty: float = -0.2


class BattleSection(EnvSection):
    """MAgent2 Battle: teams ``red`` and ``blue``; killed agents leave the episode."""

    name: Literal["battle"] = "battle"
    settings: BattleSettings = BattleSettings()
    needs = {"battle": ("magent2", "magent")}

    def group_names(self) -> list[str]:
        return ["red", "blue"]


class AdversarialPursuitSection(EnvSection):
    """MAgent2 Adversarial-Pursuit: teams ``predator`` and ``prey``."""

    name: Literal["adversarial-pursuit"] = "adversarial-pursuit"
    settings: AdversarialPursuitSettings = AdversarialPursuitSettings()
    needs = {"adversarial-pursuit": ("magent2", "magent")}

    def group_names(self) -> list[str]:
        return ["predator", "prey"]


ENVS.add("battle", EnvEntry(lambda settings: EnvFactory(make_battle, dict(settings)), BattleSection))
ENVS.add("adversarial-pursuit", EnvEntry(lambda settings: EnvFactory(make_adversarial_pursuit, dict(settings)), AdversarialPursuitSection))
