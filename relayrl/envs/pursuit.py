"""PettingZoo SISL Pursuit with the SUPER paper's settings (paper 000, Table 2; SPEC §3),
and its config section: ``pursuit`` (relayrl's vectorised implementation,
``relayrl.envs.pursuit_vector``) and ``pursuit-pz`` (PettingZoo's own)."""

from collections.abc import Callable
from typing import Any, Literal

from pettingzoo.utils.env import ParallelEnv
from pydantic import Field, model_validator

from relayrl.core.errors import MissingExtraError
from relayrl.core.strict import Strict
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection

# Paper 000, Appendix E Table 2. PettingZoo's default shared_reward=True differs: the
# paper trains on individual rewards.
PAPER_SETTINGS: dict[str, Any] = {
    "x_size": 16,
    "y_size": 16,
    "n_evaders": 30,
    "n_pursuers": 8,
    "obs_range": 7,
    "n_catch": 2,
    "freeze_evaders": False,
    "tag_reward": 0.01,
    "catch_reward": 5.0,
    "urgency_reward": -0.1,
    "surround": True,
    "max_cycles": 500,
    "shared_reward": False,
    "constraint_window": 1.0,
}


def make_pursuit(render_mode: str | None = None, **settings: Any) -> ParallelEnv:
    """A pursuit_v5 parallel env; ``settings`` override PAPER_SETTINGS key by key."""
    try:
        from pettingzoo.sisl import pursuit_v5
    except ImportError as error:  # pymunk / pygame come with the sisl extra
        raise MissingExtraError("pettingzoo[sisl]", "sisl") from error
    unknown = set(settings) - set(PAPER_SETTINGS)
    if unknown:
        raise ValueError(f"unknown pursuit settings {sorted(unknown)}; allowed: {sorted(PAPER_SETTINGS)}")
    return pursuit_v5.parallel_env(**{**PAPER_SETTINGS, **settings}, render_mode=render_mode)


class PursuitSettings(Strict):
    """pettingzoo.sisl pursuit_v5 settings; defaults are the SUPER paper's (Table 2)."""

    x_size: int = Field(16, ge=2)
    y_size: int = Field(16, ge=2)
    n_evaders: int = Field(30, ge=1)
    n_pursuers: int = Field(8, ge=1)
    obs_range: int = Field(7, ge=1)
    n_catch: int = Field(2, ge=1)
    freeze_evaders: bool = False
    tag_reward: float = 0.01
    catch_reward: float = 5.0
    urgency_reward: float = -0.1
    surround: bool = True
    max_cycles: int = Field(500, ge=1)
    shared_reward: bool = False
    constraint_window: float = Field(1.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _runnable(self) -> "PursuitSettings":
        from relayrl.envs.pursuit_vector import validate_settings

        validate_settings(self.model_dump())
        return self


class PursuitSection(EnvSection):
    """``pursuit`` is relayrl's vectorised implementation, ``pursuit-pz`` PettingZoo's own;
    both have the same dynamics (tests/envs/test_pursuit_vector.py)."""

    name: Literal["pursuit", "pursuit-pz"] = "pursuit"
    settings: PursuitSettings = PursuitSettings()
    needs = {"pursuit-pz": ("pymunk", "sisl")}

    @model_validator(mode="after")
    def _vector_kind(self) -> "PursuitSection":
        if self.name == "pursuit" and self.vector != "sync":
            raise ValueError("the vectorised pursuit runs in-process; vector=subproc needs env.name=pursuit-pz")
        return self

    def group_names(self) -> list[str]:
        return ["pursuer"]


def _factory(vectorised: bool) -> Callable[[dict[str, Any]], EnvFactory]:
    def factory(settings: dict[str, Any]) -> EnvFactory:
        from relayrl.envs.pursuit_vector import PursuitVectorEnv

        return EnvFactory(make_pursuit, dict(settings), {"pursuer": "uint8"}, PursuitVectorEnv if vectorised else None)

    return factory


ENVS.add("pursuit", EnvEntry(_factory(vectorised=True), PursuitSection))
ENVS.add("pursuit-pz", EnvEntry(_factory(vectorised=False), PursuitSection))
