"""MAgent2 Battle and Adversarial-Pursuit: PettingZoo's API tests, the paper's settings,
teams as agent groups, and agents that die leaving the episode."""

import numpy as np
import pytest

pytest.importorskip("magent2")

from pettingzoo.test import parallel_api_test  # noqa: E402

from relayrl.envs import ParallelEnvAdapter, make_env_factory  # noqa: E402
from relayrl.envs.magent import ADVERSARIAL_PURSUIT_SETTINGS, BATTLE_SETTINGS, make_adversarial_pursuit, make_battle  # noqa: E402
from tests.envs.test_adapters import _lockstep  # noqa: E402
from env_arrays import split as _split


def test_battle_passes_parallel_api_test():
    parallel_api_test(make_battle(max_cycles=40), num_cycles=60)


def test_adversarial_pursuit_passes_parallel_api_test():
    parallel_api_test(make_adversarial_pursuit(max_cycles=40), num_cycles=60)


def test_paper_settings_reach_battle():
    env = make_battle()
    assert env.max_cycles == 1000 and env.map_size == 18
    adapter = ParallelEnvAdapter(env)
    assert [(g.name, g.n_agents, g.obs_shape, g.n_actions) for g in adapter.groups] == [
        ("red", 6, (13, 13, 5), 21),
        ("blue", 6, (13, 13, 5), 21),
    ]
    assert BATTLE_SETTINGS["step_reward"] == -0.005 and BATTLE_SETTINGS["attack_opponent_reward"] == 0.2


def test_paper_settings_reach_adversarial_pursuit():
    env = make_adversarial_pursuit()
    assert env.max_cycles == 500 and env.map_size == 18
    adapter = ParallelEnvAdapter(env)
    assert [(g.name, g.n_agents, g.obs_shape, g.n_actions) for g in adapter.groups] == [
        ("predator", 4, (10, 10, 5), 13),
        ("prey", 8, (9, 9, 5), 9),
    ]
    assert ADVERSARIAL_PURSUIT_SETTINGS["tag_penalty"] == -0.2


def test_step_reward_setting_changes_the_rewards():
    """A reward setting reaches the engine: with no fights, every living agent gets step_reward."""
    env = make_battle(step_reward=-0.5, attack_penalty=0.0)
    env.reset(seed=0)
    _, rewards, *_ = env.step({a: 6 for a in env.agents})  # 6: stay in place, no attack
    assert set(rewards.values()) == {-0.5}


def test_unknown_setting_is_rejected_with_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed"):
        make_battle(map_sise=18)


def _attack_mostly(group, rng):
    """Battle's actions 13-20 attack the 8 neighbouring cells: fights, so agents die."""
    attack = rng.integers(13, 21, group.n_agents)
    return np.where(rng.random(group.n_agents) < 0.8, attack, rng.integers(0, 13, group.n_agents))


def test_battle_adapter_round_trip_with_agents_dying():
    rng = np.random.default_rng(2)
    reference = make_battle()
    _lockstep(reference, ParallelEnvAdapter(make_battle()), 400, 2, rng, _attack_mostly)
    assert 0 < len(reference.agents) < 12, "no agent died in 400 steps: removal was not exercised"


def test_adversarial_pursuit_adapter_round_trip():
    rng = np.random.default_rng(1)
    _lockstep(make_adversarial_pursuit(max_cycles=30), ParallelEnvAdapter(make_adversarial_pursuit(max_cycles=30)), 40, 2, rng)


def test_dead_agents_leave_the_alive_mask_and_stay_out():
    """An agent that dies is terminated once, then absent (alive False) until the episode ends."""
    adapter = make_env_factory("battle", {"max_cycles": 1000}).adapter()
    rng = np.random.default_rng(3)
    obs, alive = _split(adapter.reset(seed=11))
    gone = [np.zeros(g.n_agents, bool) for g in adapter.groups]
    deaths = 0
    for _ in range(1000):
        steps, done = adapter.step([_attack_mostly(g, rng) for g in adapter.groups])
        for g, step in enumerate(steps):
            assert not (gone[g] & step.alive).any(), "a dead agent came back"
            died = alive[g] & step.terminated
            deaths += int(died.sum())
            assert not (died & step.alive).any()
            gone[g] |= died
            alive[g] = step.alive
        if done:
            break
    assert deaths > 0, "no agent died: the test did not exercise removal"


def test_the_state_is_there_when_a_team_has_no_living_agent():
    env = make_battle(map_size=12, max_cycles=40)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        env.step({a: int(rng.integers(21)) for a in env.agents})
    np.testing.assert_array_equal(env.state(), env.unwrapped.state())  # both teams alive: MAgent2's own state
    game = env.unwrapped.env
    red, blue = env.unwrapped.handles
    before = env.state()
    game.reset()  # the map empties; blue comes back where it was, red does not (as if it had lost)
    pos = [[int(x), int(y), 0] for x, y in np.argwhere(before[:, :, 3] == 1)]
    game.add_agents(blue, method="custom", pos=pos)
    with pytest.raises(ValueError):
        env.unwrapped.state()  # magent2 0.3.4 unpacks the empty team's positions
    state = env.state()
    assert not state[:, :, 1:3].any()  # red's planes: nobody
    np.testing.assert_array_equal(state[:, :, 3], before[:, :, 3])  # blue's presence
    np.testing.assert_array_equal(state[:, :, 0], before[:, :, 0])  # the walls
    assert state[:, :, 4].max() > 0  # blue's hit points
