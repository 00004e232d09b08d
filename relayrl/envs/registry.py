"""Environment factories by name; a factory is picklable so subprocess workers can use it."""

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pettingzoo.utils.env import ParallelEnv

from relayrl.core.registry import Registry
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


def _pursuit(settings: dict[str, Any], vectorised: bool) -> EnvFactory:
    from relayrl.envs.pursuit import make_pursuit
    from relayrl.envs.pursuit_vector import PursuitVectorEnv

    return EnvFactory(make_pursuit, dict(settings), {"pursuer": "uint8"}, PursuitVectorEnv if vectorised else None)


def _predator_prey(settings: dict[str, Any], vectorised: bool) -> EnvFactory:
    from relayrl.envs.predator_prey import PredatorPreyParallelEnv, PredatorPreyVectorEnv

    return EnvFactory(PredatorPreyParallelEnv, dict(settings), {"predator": "int8"}, PredatorPreyVectorEnv if vectorised else None)


def _magent(maker_name: str) -> Callable[[dict[str, Any]], EnvFactory]:
    def build(settings: dict[str, Any]) -> EnvFactory:
        from relayrl.envs import magent

        return EnvFactory(getattr(magent, maker_name), dict(settings))

    return build


def _corridor(settings: dict[str, Any]) -> EnvFactory:
    from relayrl.envs.corridor import CorridorEnv

    return EnvFactory(CorridorEnv, dict(settings), {"runner": "uint8", "walker": "uint8"})


def _gym(settings: dict[str, Any]) -> EnvFactory:
    from relayrl.envs.gym_copies import make_gym_copies

    return EnvFactory(None, dict(settings), vectorised=make_gym_copies)


# Built-in environments: ``pursuit`` (vectorised NumPy Pursuit), ``pursuit-pz`` (PettingZoo
# SISL's own implementation), ``predator-prey`` (the stag hunt, vectorised) and
# ``predator-prey-pz`` (one game per PettingZoo env, the same dynamics),
# ``battle`` and ``adversarial-pursuit`` (MAgent2), ``gym`` (K
# copies of a Gymnasium env, one per agent) and ``corridor`` (test env). Each builder
# imports its env only when called: the optional extras stay optional.
ENVS: Registry[Callable[[dict[str, Any]], EnvFactory]] = Registry("environment")
ENVS.add("pursuit", lambda settings: _pursuit(settings, vectorised=True))
ENVS.add("pursuit-pz", lambda settings: _pursuit(settings, vectorised=False))
ENVS.add("predator-prey", lambda settings: _predator_prey(settings, vectorised=True))
ENVS.add("predator-prey-pz", lambda settings: _predator_prey(settings, vectorised=False))
ENVS.add("battle", _magent("make_battle"))
ENVS.add("adversarial-pursuit", _magent("make_adversarial_pursuit"))
ENVS.add("corridor", _corridor)
ENVS.add("gym", _gym)


def parallel_env(module: str, **kwargs: Any) -> ParallelEnv:
    """``module.parallel_env(**kwargs)``: a PettingZoo Parallel env named by its module path."""
    return importlib.import_module(module).parallel_env(**kwargs)


def check_parallel_env(module: str) -> None:
    """Fails with the fix when ``module`` is not an installed PettingZoo Parallel env."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        raise ValueError(f"{module} cannot be imported ({error}): install the package that provides it") from None
    if not callable(getattr(imported, "parallel_env", None)):
        raise ValueError(f"{module} has no parallel_env(): name a PettingZoo Parallel env module, e.g. pettingzoo.sisl.multiwalker_v9")


def make_env_factory(name: str, settings: dict[str, Any]) -> EnvFactory:
    """A built-in environment by name (``ENVS``), or any installed PettingZoo Parallel env
    by its module path with ``settings`` as its keyword arguments."""
    if name in ENVS:
        return ENVS[name](settings)
    if "." in name:
        check_parallel_env(name)
        return EnvFactory(functools.partial(parallel_env, name), dict(settings))
    raise ValueError(f"unknown environment {name!r}; built-in: {', '.join(ENVS)}, or a PettingZoo module path")
