"""Atari games through ale-py: PettingZoo's API test, the preprocessing (frame stack,
shrinking by area, the step limit as truncation), a game's own scores as rewards, seeded
episodes, an episode saved and restored exactly, and bad settings refused by name."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from relayrl.core.errors import ConfigError
from relayrl.envs.atari import AGENT, AtariGame, area_weights
from relayrl.experiment import build_config

pytest.importorskip("ale_py")


def _play(env: AtariGame, actions: np.ndarray) -> list[tuple]:
    return [env.step({AGENT: int(a)}) for a in actions]


def test_the_api_test_passes():
    parallel_api_test(AtariGame(max_frames=400), num_cycles=150)


def test_an_observation_stacks_the_last_four_shrunk_screens():
    env = AtariGame()
    first, _ = env.reset(seed=1)
    obs = first[AGENT]
    assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8
    assert all(np.array_equal(obs[..., k], obs[..., 0]) for k in range(4))  # a reset repeats its first screen
    rng = np.random.default_rng(0)
    for _ in range(30):
        nxt = env.step({AGENT: int(rng.integers(6))})[0][AGENT]
        assert np.array_equal(nxt[..., :3], obs[..., 1:])  # the oldest screen leaves, the newest comes last
        obs = nxt
    assert len(np.unique(obs)) > 2  # a game screen, not a blank


def test_area_weights_average_what_each_output_pixel_covers():
    for size_in, size_out in ((210, 84), (160, 84), (168, 84)):
        w = area_weights(size_in, size_out)
        np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)  # a flat screen stays flat
        np.testing.assert_allclose(w.sum(axis=0), size_out / size_in, rtol=1e-6)  # every input pixel counts once
    halves = area_weights(168, 84)
    np.testing.assert_allclose(halves[3, 6:8], 0.5)  # an exact factor of 2: pairs averaged
    assert np.count_nonzero(halves[3]) == 2


def test_a_game_ends_at_its_own_end_with_its_own_scores():
    env = AtariGame(noop_max=0)
    env.reset(seed=0)
    rewards, rng = [], np.random.default_rng(0)
    while True:
        _, r, terminated, truncated, _ = env.step({AGENT: int(rng.integers(6))})
        rewards.append(r[AGENT])
        if terminated[AGENT] or truncated[AGENT]:
            break
    assert terminated[AGENT] and not truncated[AGENT] and not env.agents
    points = np.array(rewards)
    assert set(np.unique(points)) <= {-1.0, 0.0, 1.0} and (points == -1).sum() == 21  # Pong ends when a side has 21 points, unclipped


def test_the_frame_limit_truncates():
    env = AtariGame(max_frames=40, noop_max=0)  # 40 emulator frames: 10 steps of 4
    env.reset(seed=0)
    ends = [(s[2][AGENT], s[3][AGENT]) for s in _play(env, np.zeros(10, int))]
    assert ends[-1] == (False, True) and not any(t or u for t, u in ends[:-1])


def test_a_seed_fixes_the_episode_and_seeds_differ():
    actions = np.random.default_rng(3).integers(6, size=300)
    runs = []
    for seed in (7, 7, 8):
        env = AtariGame()
        start = env.reset(seed=seed)[0][AGENT]
        runs.append([start] + [step[0][AGENT] for step in _play(env, actions)])
    assert all(np.array_equal(a, b) for a, b in zip(runs[0], runs[1]))
    assert not all(np.array_equal(a, b) for a, b in zip(runs[0], runs[2]))


def test_an_episode_in_flight_is_restored_exactly_from_its_state():
    rng = np.random.default_rng(0)
    env = AtariGame(repeat_action_probability=0.25)  # sticky actions: the emulator's RNG is part of the state
    env.reset(seed=5)
    _play(env, rng.integers(6, size=200))
    state = env.state_dict()
    assert all(isinstance(v, (np.ndarray, dict, list)) for v in state.values())  # data, no emulator object
    later = rng.integers(6, size=300)
    expected = _play(env, later)
    other = AtariGame(repeat_action_probability=0.25)
    other.reset(seed=99)
    other.load_state_dict(state)
    got = _play(other, later)
    for (o1, r1, t1, u1, _), (o2, r2, t2, u2, _) in zip(expected, got):
        assert np.array_equal(o1[AGENT], o2[AGENT]) and r1 == r2 and t1 == t2 and u1 == u2


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"game": "pongg"}, "'pongg' is not a ROM that ale-py ships; e.g. pong"),
        ({"frame_skip": 0}, "frame_skip"),
        ({"repeat_action_probability": 1.0}, "repeat_action_probability"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ConfigError, match=message):
        build_config({"env": {"name": "atari", "settings": settings}, "on_policy": {"torso": "nature_cnn", "hidden": []}})
