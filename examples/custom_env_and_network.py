"""Python API: build a config in code, bring your own PettingZoo env and network, train, evaluate.

Run: python examples/custom_env_and_network.py
"""

import numpy as np
import torch

from relayrl.envs import EnvFactory
from relayrl.envs.corridor import CorridorEnv
from relayrl.experiment import build_config, train
from relayrl.nets import StackedLinear


def my_env(n_agents: int = 4, length: int = 10) -> CorridorEnv:
    """Any PettingZoo ParallelEnv factory works; it must be a module-level function."""
    return CorridorEnv(n_agents=n_agents, length=length, max_steps=30)


class MyQNetwork(torch.nn.Module):
    """Any module mapping [P, B, *obs_shape] -> [P, B, n_actions] with a leading [P] axis
    on every parameter (one slice per independent agent)."""

    def __init__(self, n_sets: int, obs_shape: tuple[int, ...], n_actions: int) -> None:
        super().__init__()
        self.hidden = StackedLinear(n_sets, obs_shape[0], 32)
        self.out = StackedLinear(n_sets, 32, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(obs.float())))


if __name__ == "__main__":
    config = build_config(
        {
            "preset": "corridor-example",
            "env": {"name": "user"},  # the env comes from env_factory below
            "sharing": {"select": "quantile", "bandwidth": 0.1},
            "dqn": {"lr": 1e-3, "learning_starts": 200, "epsilon_start": 1.0, "epsilon_end": 0.05,
                    "epsilon_steps": 3000, "target_update_interval": 200, "buffer_size": 5000, "fragment_length": 1},
            "total_steps": 6000,
            "report_interval": 1000,
            "eval": {"interval": 2000, "episodes": 4},
        }
    )
    factory = EnvFactory(my_env, {"n_agents": 4, "length": 10})
    run = train(config, out=None, env_factory=factory, network_factory=MyQNetwork)
    greedy = run.evaluator.greedy(episodes=8)
    print(f"greedy reward per episode (4 runners, max 4.0): {np.mean(greedy):.2f}")
