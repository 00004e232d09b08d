"""Every vector env ends its episodes in flight on request (a round's end) and reports them
with their returns and lengths so far; the episodes that ended before wait for the drain."""

import numpy as np
import pytest

from relayrl.envs.gym_copies import GymCopiesEnv
from relayrl.envs.registry import make_env_factory
from relayrl.envs.vector_env import make_vector_env

E = 3


def _venv(name: str):
    if name == "cartpole":
        return GymCopiesEnv("CartPole-v1", 2, num_envs=E)
    settings = {
        "corridor": {"n_agents": 2, "length": 3, "max_steps": 7},
        "pursuit": {"x_size": 8, "y_size": 8, "n_pursuers": 4, "n_evaders": 2, "max_cycles": 9},
        "predator-prey": {"n_predators": 3, "n_stags": 2, "x_size": 5, "y_size": 5, "max_cycles": 9},
    }[name]
    vector = "subproc" if name == "corridor" else "sync"
    return make_vector_env(make_env_factory(name, settings, with_state=False), E, vector)


@pytest.mark.parametrize("name", ["corridor", "pursuit", "predator-prey", "cartpole"])
def test_a_cut_ends_the_episodes_in_flight_with_their_returns_so_far(name):
    venv = _venv(name)
    try:
        rng = np.random.default_rng(0)
        venv.reset(0)
        rows = E * (2 if name == "cartpole" else 1)  # K copies of a single-agent env: an episode per agent
        returns, lengths = np.zeros(rows), np.zeros(rows, np.int64)
        for _ in range(25):
            actions = [rng.integers(0, spec.n_actions, (E, spec.n_agents)) for spec in venv.groups]
            steps, over = venv.step(actions)
            reward = sum(s.reward.astype(np.float64).sum(axis=1) for s in steps) if rows == E else steps[0].reward.reshape(-1)
            ended = over if rows == E else (steps[0].terminated | steps[0].truncated).reshape(-1)
            returns += reward
            lengths += 1
            returns[ended], lengths[ended] = 0.0, 0
        drained = venv.drain_episodes()
        cut = venv.cut_episodes()
        in_flight = np.flatnonzero(lengths > 0)
        assert len(cut.returns) == len(in_flight) > 0 and len(drained.returns) > 0  # 25 steps: some ended, some run on
        order = np.array(cut.copies) * (rows // E) + (np.array(cut.agents) if cut.agents else 0)
        np.testing.assert_allclose(np.array(cut.returns).sum(axis=1), returns[order], rtol=1e-6)
        np.testing.assert_array_equal(cut.lengths, lengths[order])
        assert sorted(order.tolist()) == in_flight.tolist()
        assert not venv.drain_episodes().returns and not venv.cut_episodes().returns  # nothing counted twice
    finally:
        venv.close()
