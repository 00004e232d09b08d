"""Environment factories by name; a factory is picklable so subprocess workers can use it."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pettingzoo.utils.env import ParallelEnv

from relayrl.envs.pettingzoo_adapter import ParallelEnvAdapter


@dataclass(frozen=True)
class EnvFactory:
    """Makes one PettingZoo ParallelEnv. ``maker`` must be picklable (a module-level
    function or a functools.partial of one) for the subprocess vector env."""

    maker: Callable[..., ParallelEnv] | None
    settings: dict[str, Any] = field(default_factory=dict)
    obs_dtypes: dict[str, str] = field(default_factory=dict)
    # A batched implementation ``(num_envs, **settings) -> VectorEnv`` with the same
    # dynamics; where set, vector envs use it instead of E copies of ``maker``.
    vectorised: Callable[..., Any] | None = None

    def make(self) -> ParallelEnv:
        if self.maker is None:
            raise ValueError("this environment exists only in its batched form (make_vector_env)")
        return self.maker(**self.settings)

    def adapter(self) -> ParallelEnvAdapter:
        return ParallelEnvAdapter(self.make(), self.obs_dtypes)


def make_env_factory(name: str, settings: dict[str, Any]) -> EnvFactory:
    """Built-in environments by name: ``pursuit`` (vectorised NumPy Pursuit), ``pursuit-pz``
    (PettingZoo SISL's own implementation), ``battle`` and ``adversarial-pursuit`` (MAgent2)
    ``gym`` (K copies of a Gymnasium env, one per agent) and ``corridor`` (test env)."""
    if name in ("pursuit", "pursuit-pz"):
        from relayrl.envs.pursuit import make_pursuit
        from relayrl.envs.pursuit_vector import PursuitVectorEnv

        vectorised = PursuitVectorEnv if name == "pursuit" else None
        return EnvFactory(make_pursuit, dict(settings), {"pursuer": "uint8"}, vectorised)
    if name == "battle":
        from relayrl.envs.magent import make_battle

        return EnvFactory(make_battle, dict(settings))
    if name == "adversarial-pursuit":
        from relayrl.envs.magent import make_adversarial_pursuit

        return EnvFactory(make_adversarial_pursuit, dict(settings))
    if name == "corridor":
        from relayrl.envs.corridor import CorridorEnv

        return EnvFactory(CorridorEnv, dict(settings), {"runner": "uint8", "walker": "uint8"})
    if name == "gym":
        from relayrl.envs.gym_copies import make_gym_copies

        return EnvFactory(None, dict(settings), vectorised=make_gym_copies)
    raise ValueError(f"unknown environment {name!r}; built-in: pursuit, pursuit-pz, battle, adversarial-pursuit, gym, corridor")
