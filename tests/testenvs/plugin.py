"""A user's module of registrations, named in a config's ``plugins``: an env with a config
section class of its own (``hall``: a corridor whose section names its length ``size``), a
copy of DQN under a new name and a copy of the quantile selection rule. Loaded as
``testenvs.plugin``."""

from typing import Any, Literal

from pydantic import Field

from relayrl.algos import ALGORITHMS
from relayrl.core.strict import Strict
from relayrl.envs import EnvFactory
from relayrl.envs.corridor import CorridorEnv
from relayrl.envs.registry import ENVS, EnvEntry
from relayrl.envs.section import EnvSection
from relayrl.sharing.selectors import SELECTORS


class HallSettings(Strict):
    size: int = Field(4, ge=2)
    runners: int = Field(3, ge=1)


class HallSection(EnvSection):
    name: Literal["hall"] = "hall"
    settings: HallSettings = HallSettings()

    def group_names(self) -> list[str]:
        return ["runner"]

    def env_settings(self) -> dict[str, Any]:
        return {"n_agents": self.settings.runners, "length": self.settings.size, "max_steps": 12}


ENVS.add("hall", EnvEntry(lambda settings: EnvFactory(CorridorEnv, dict(settings), {"runner": "uint8"}), HallSection))
ALGORITHMS.add("dqn-plugin", ALGORITHMS["dqn"])
SELECTORS.add("quantile-plugin", SELECTORS["quantile"])
