"""PettingZoo's own API tests on every environment relayrl builds or wraps."""

import pytest
from pettingzoo.test import parallel_api_test

from relayrl.envs.corridor import CorridorEnv
from relayrl.envs.pursuit import make_pursuit


@pytest.mark.parametrize("settings", [{}, {"length": 3, "max_steps": 5, "n_agents": 2}])
def test_corridor_passes_parallel_api_test(settings):
    parallel_api_test(CorridorEnv(**settings), num_cycles=200)


def test_pursuit_passes_parallel_api_test():
    parallel_api_test(make_pursuit(max_cycles=50), num_cycles=100)
