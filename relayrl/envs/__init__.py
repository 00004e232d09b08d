"""Environment adapters, vector envs and built-in environments.

Everything above this layer sees arrays with an agent axis ``[E, N, ...]`` per
agent group, never PettingZoo's agent-keyed dicts.
"""

from relayrl.envs.pettingzoo_adapter import ParallelEnvAdapter
from relayrl.envs.types import GroupObs, GroupStep
from relayrl.envs.registry import EnvFactory, make_env_factory
from relayrl.envs.vector_env import SubprocVectorEnv, SyncVectorEnv, VectorEnv, make_vector_env

__all__ = [
    "EnvFactory",
    "GroupObs",
    "GroupStep",
    "ParallelEnvAdapter",
    "SubprocVectorEnv",
    "SyncVectorEnv",
    "VectorEnv",
    "make_env_factory",
    "make_vector_env",
]
