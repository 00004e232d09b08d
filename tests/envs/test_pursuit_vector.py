"""The vectorised Pursuit against the installed PettingZoo implementation, output by output.

Each check runs E PettingZoo games beside one PursuitVectorEnv holding the same states.
Both get the same pursuer actions; PettingZoo's evaders are driven by a scripted controller
that plays the same per-slot moves the vectorised env is given. After every episode end
PettingZoo resets with its own RNG and its new state is copied into the vectorised game.
"""

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from relayrl.envs import ParallelEnvAdapter
from relayrl.envs.pursuit import PAPER_SETTINGS, make_pursuit
from relayrl.envs.pursuit_vector import PursuitVectorEnv, rectangle_map, validate_settings
from env_arrays import split as _split


class ScriptedEvaders:
    """Stands in for pursuit's RandomPolicy: the i-th call of a cycle plays the move of the
    i-th evader still in the game."""

    def __init__(self, game) -> None:
        self.game = game
        self.moves = np.zeros(0, np.int64)
        self.calls = 0

    def start_cycle(self, moves: np.ndarray) -> None:
        self.moves, self.calls = moves, 0

    def act(self, state) -> int:
        slot = np.flatnonzero(~self.game.evaders_gone)[self.calls]
        self.calls += 1
        return int(self.moves[slot])


def _game_of(adapter: ParallelEnvAdapter):
    return adapter.env.aec_env.unwrapped.env  # pursuit_base.Pursuit


def _copy_state(game, venv: PursuitVectorEnv, e: int) -> None:
    evaders = np.zeros((venv.M, 2), np.int64)
    alive = ~game.evaders_gone
    evaders[alive] = [a.current_position() for a in game.evader_layer.allies]
    pursuers = np.array([a.current_position() for a in game.pursuer_layer.allies])
    venv.set_game(e, pursuers, evaders, alive, game.frames)


def chasing_actions(venv: PursuitVectorEnv, rng: np.random.Generator) -> np.ndarray:
    """Mostly steps each pursuer towards its nearest evader (so catches happen), else random."""
    gap = venv.evaders[:, None] - venv.pursuers[:, :, None]  # [E, N, M, 2]
    distance = np.abs(gap).sum(-1) + np.where(venv.evader_alive[:, None], 0, 10_000)
    nearest = np.take_along_axis(gap, distance.argmin(-1)[..., None, None], axis=2)[:, :, 0]
    along_x = rng.random(nearest.shape[:2]) < 0.5
    toward_x = np.where(nearest[..., 0] < 0, 0, 1)  # left / right
    toward_y = np.where(nearest[..., 1] > 0, 2, 3)  # up / down
    chase = np.where(along_x & (nearest[..., 0] != 0) | (nearest[..., 1] == 0), toward_x, toward_y)
    # surround catches need pursuers next to the evader, n_catch catches need them on it
    close_enough = 1 if venv.settings["surround"] else 0
    chase = np.where(np.abs(nearest).sum(-1) <= close_enough, 4, chase)
    return np.where(rng.random(chase.shape) < 0.75, chase, rng.integers(0, 5, chase.shape))


def run_against_pettingzoo(settings: dict, num_envs: int, cycles: int, seed: int) -> dict[str, int]:
    full = {**PAPER_SETTINGS, **settings}
    adapters = [ParallelEnvAdapter(make_pursuit(**settings), {"pursuer": "uint8"}) for _ in range(num_envs)]
    scripts = []
    for adapter in adapters:
        game = _game_of(adapter)
        script = ScriptedEvaders(game)
        if not full["freeze_evaders"]:
            game.evader_controller = script
        scripts.append(script)
    venv = PursuitVectorEnv(num_envs, **settings)
    venv.reset(seed)
    first = [adapter.reset(seed=seed + e)[0].obs for e, adapter in enumerate(adapters)]
    for e, adapter in enumerate(adapters):
        _copy_state(_game_of(adapter), venv, e)
    np.testing.assert_array_equal(venv.observe(), np.stack(first))

    rng = np.random.default_rng(seed)
    m = full["n_evaders"]
    seen = {"episodes": 0, "terminations": 0, "catch_rewards": 0, "tag_rewards": 0}
    for cycle in range(cycles):
        actions = chasing_actions(venv, rng)
        moves = rng.integers(0, 5, (num_envs, m))
        expected = []
        for e, adapter in enumerate(adapters):
            scripts[e].start_cycle(moves[e])
            steps, done = adapter.step([actions[e]])
            expected.append((steps[0], done))
        got, over = venv.step_with_evader_moves(actions, moves)
        got = got[0]
        for e, (want, done) in enumerate(expected):
            where = f"cycle {cycle}, game {e}, settings {settings}"
            assert bool(over[e]) == done, where
            np.testing.assert_array_equal(got.next_obs[e], want.next_obs, err_msg=where)
            np.testing.assert_array_equal(got.reward[e], want.reward, err_msg=where)
            np.testing.assert_array_equal(got.terminated[e], want.terminated, err_msg=where)
            np.testing.assert_array_equal(got.truncated[e], want.truncated, err_msg=where)
            if done:  # every pursuer leaves at once when a game ends
                assert not want.alive.any(), where
                seen["episodes"] += 1
                seen["terminations"] += int(want.terminated.all())
                fresh, alive = _split(adapters[e].reset())
                assert alive[0].all()
                _copy_state(_game_of(adapters[e]), venv, e)
                np.testing.assert_array_equal(venv.observe()[e], fresh[0], err_msg=where)
            else:
                np.testing.assert_array_equal(got.obs[e], want.obs, err_msg=where)
                assert want.alive.all() and got.alive[e].all(), where
            seen["catch_rewards"] += int((want.reward >= full["catch_reward"] / 2).sum()) if full["catch_reward"] > 0 else 0
            seen["tag_rewards"] += int((want.reward > full["urgency_reward"] + 1e-9).sum())
    return seen


CONFIGS = [
    pytest.param({"max_cycles": 60}, 2, 1000, id="paper-16x16"),
    pytest.param(
        {"x_size": 7, "y_size": 5, "n_pursuers": 5, "n_evaders": 3, "obs_range": 5, "max_cycles": 40},
        3, 800, id="odd-7x5-surround",
    ),
    pytest.param(
        {"x_size": 9, "y_size": 6, "n_pursuers": 6, "n_evaders": 6, "obs_range": 4, "surround": False,
         "n_catch": 2, "shared_reward": True, "max_cycles": 50},
        3, 800, id="9x6-ncatch2-shared-even-obs",
    ),
    pytest.param(
        {"x_size": 6, "y_size": 9, "n_pursuers": 4, "n_evaders": 5, "obs_range": 9, "surround": False,
         "n_catch": 1, "freeze_evaders": True, "tag_reward": 0.05, "catch_reward": 2.0,
         "urgency_reward": -0.3, "max_cycles": 45},
        3, 800, id="6x9-frozen-ncatch1-wide-obs",
    ),
    pytest.param(
        {"x_size": 11, "y_size": 8, "n_pursuers": 4, "n_evaders": 4, "obs_range": 3,
         "constraint_window": 0.7, "shared_reward": True, "max_cycles": 70},
        3, 800, id="11x8-window-shared",
    ),
    pytest.param(
        {"x_size": 4, "y_size": 4, "n_pursuers": 3, "n_evaders": 2, "obs_range": 7, "max_cycles": 25},
        3, 800, id="tiny-4x4",
    ),
]


@pytest.mark.parametrize("settings,num_envs,cycles", CONFIGS)
def test_equals_pettingzoo_step_by_step(settings, num_envs, cycles):
    seen = run_against_pettingzoo(settings, num_envs, cycles, seed=7)
    assert seen["episodes"] >= 10  # resets and final observations are exercised
    assert seen["tag_rewards"] > 0
    assert seen["catch_rewards"] > 0  # the catch rules were exercised, not only movement


def test_catches_can_end_the_game_early():
    seen = run_against_pettingzoo(
        {"x_size": 5, "y_size": 5, "n_pursuers": 4, "n_evaders": 1, "surround": False, "n_catch": 1, "max_cycles": 200},
        3, 600, seed=3,
    )
    assert seen["terminations"] >= 5


def test_map_matches_pettingzoo():
    from pettingzoo.sisl.pursuit.utils.two_d_maps import rectangle_map as reference

    for x, y in [(16, 16), (7, 5), (4, 4), (11, 8), (3, 10)]:
        np.testing.assert_array_equal(rectangle_map(x, y), reference(x, y) == -1)


def test_spawn_distribution_matches_pettingzoo():
    """Start positions: same window rule, no building, no two agents of a kind on the same or
    adjacent cells, and the same cell frequencies as PettingZoo's resets (chi-square)."""
    settings = {"x_size": 8, "y_size": 7, "n_pursuers": 3, "n_evaders": 5, "constraint_window": 0.8}
    venv = PursuitVectorEnv(4000, **settings)
    venv.reset(1)
    building = rectangle_map(8, 7)
    for positions in (venv.pursuers, venv.evaders):
        assert not building[positions[..., 0], positions[..., 1]].any()
        gap = np.abs(positions[:, :, None] - positions[:, None]).sum(-1)
        off_diagonal = ~np.eye(positions.shape[1], dtype=bool)
        assert (gap[:, off_diagonal] >= 2).all()
        span = positions.max(axis=1) - positions.min(axis=1)
        assert (span[:, 0] <= int(8 * 0.8)).all() and (span[:, 1] <= int(7 * 0.8)).all()

    adapter = ParallelEnvAdapter(make_pursuit(**settings))
    adapter.env.aec_env.unwrapped.reset(seed=5)  # seeds the game's generator
    game = _game_of(adapter)
    reference = {"pursuers": np.zeros(56, np.int64), "evaders": np.zeros(56, np.int64)}
    for _ in range(1000):
        game.reset()
        for name, layer in (("pursuers", game.pursuer_layer), ("evaders", game.evader_layer)):
            for agent in layer.allies:
                x, y = agent.current_position()
                reference[name][x * 7 + y] += 1
    for name, positions in (("pursuers", venv.pursuers), ("evaders", venv.evaders)):
        ours = np.bincount((positions[..., 0] * 7 + positions[..., 1]).ravel(), minlength=56)
        used = (ours + reference[name]) > 0
        _, p_value, _, _ = chi2_contingency(np.stack([ours[used], reference[name][used]]))
        assert p_value > 1e-3, f"{name}: p={p_value}"


def test_state_round_trip_continues_exactly():
    venv = PursuitVectorEnv(4, x_size=8, y_size=8, n_evaders=5, max_cycles=30)
    venv.reset(3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        venv.step([rng.integers(0, 5, (4, 8))])
    saved = venv.get_state()
    actions = rng.integers(0, 5, (40, 4, 8))
    first = [venv.step([a])[0][0] for a in actions]
    copy = PursuitVectorEnv(4, x_size=8, y_size=8, n_evaders=5, max_cycles=30)
    copy.set_state(saved)
    for a, want in zip(actions, first):
        got = copy.step([a])[0][0]
        np.testing.assert_array_equal(got.obs, want.obs)
        np.testing.assert_array_equal(got.reward, want.reward)
    other = PursuitVectorEnv(4, x_size=9, y_size=8, n_evaders=5, max_cycles=30)
    with pytest.raises(ValueError, match="different pursuit settings"):
        other.set_state(saved)
    with pytest.raises(ValueError, match="pursuit-pz"):
        copy.set_state({"copies": []})  # a PettingZoo copies' state: not a vectorised-pursuit one


def test_bad_settings_and_actions_are_named():
    with pytest.raises(ValueError, match="constraint_window"):
        validate_settings({"constraint_window": 0.05})
    with pytest.raises(ValueError, match="unknown pursuit settings"):
        validate_settings({"grid": 3})
    venv = PursuitVectorEnv(2, x_size=6, y_size=6, n_evaders=2, n_pursuers=2)
    venv.reset(0)
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        venv.step([np.full((2, 2), 5)])
