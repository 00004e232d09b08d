"""Environment adapters, vector envs and built-in environments.

Everything above this layer sees arrays with an agent axis ``[E, N, ...]`` per
agent group, never PettingZoo's agent-keyed dicts. Importing the package registers every
built-in environment (``relayrl.envs.registry.ENVS``), in the order ``relayrl list`` shows.
"""

from relayrl.envs.pettingzoo_adapter import ParallelEnvAdapter
from relayrl.envs.types import GroupObs, GroupStep
from relayrl.envs.registry import EnvFactory, make_env_factory
from relayrl.envs.vector_env import SubprocVectorEnv, SyncVectorEnv, VectorEnv, make_vector_env
from relayrl.envs import pursuit, predator_prey_pz, navigation, spread, tag, reference, magent, corridor, gym_copies, gym_multiagent, atari, user  # noqa: F401  (registration)

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
