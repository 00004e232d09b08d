"""Frames of games: relayrl's array games draw what their arrays hold, envs behind the
PettingZoo adapter draw through their own render(), and an env that cannot draw is refused
with the list of those that can."""

import dataclasses

import numpy as np
import pytest

from relayrl.core.errors import ConfigError
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.envs.frames import BACKGROUND, GROUP_COLOURS, LANDMARK, Filmed, animation_path, disks, write_animation
from relayrl.envs.navigation import NavigationVectorEnv
from relayrl.envs.predator_prey import PredatorPreyVectorEnv
from relayrl.envs.pursuit_vector import PursuitVectorEnv
from relayrl.envs.registry import EnvFactory


def _pixel(frame: np.ndarray, x: float, y: float, extent: float = 1.0) -> np.ndarray:
    """The colour at world point (x, y) of a particle frame spanning [-extent, extent]^2."""
    size = frame.shape[0]
    column = int((x + extent) / (2 * extent) * size)
    row = int((extent - y) / (2 * extent) * size)
    return frame[row, column]


def test_disks_put_each_body_where_it_is_later_ones_on_top():
    frame = disks(np.array([[0.5, 0.5], [-0.5, -0.25], [-0.5, -0.25]]), np.array([0.1, 0.2, 0.05]), GROUP_COLOURS[:3], extent=1.0)
    assert frame.shape == (400, 400, 3) and frame.dtype == np.uint8
    assert (_pixel(frame, 0.5, 0.5) == GROUP_COLOURS[0]).all()
    assert (_pixel(frame, -0.5, -0.25) == GROUP_COLOURS[2]).all()  # the small disk over the large one
    assert (_pixel(frame, -0.5, -0.1) == GROUP_COLOURS[1]).all()  # the large one around it
    assert (_pixel(frame, 0.0, 0.0) == frame[0, 0]).all()  # background between them


def test_navigation_draws_agents_and_its_targets_green_while_occupied():
    env = NavigationVectorEnv(2)
    env.reset(0)
    env.bodies.pos[1] = [[0.5, 0.5], [-0.5, 0.5], [0.0, -0.5]]
    env.targets[1] = [[0.5, 0.5], [-0.5, -0.5], [0.9, -0.9]]  # the first occupied by agent 0
    frame = env.render(1)
    assert (_pixel(frame, 0.5, 0.5) == GROUP_COLOURS[2]).all()  # occupied: drawn over the agent in green
    assert (_pixel(frame, 0.5, 0.62) == GROUP_COLOURS[0]).all()  # the agent around it
    assert (_pixel(frame, -0.5, -0.5) == LANDMARK).all()  # free target
    assert (_pixel(frame, -0.5, 0.5) == GROUP_COLOURS[0]).all()
    assert not np.array_equal(frame, env.render(0))  # each game its own


def test_pursuit_and_predator_prey_draw_their_grids_cell_by_cell():
    env = PursuitVectorEnv(1, n_pursuers=2, n_evaders=2)
    env.reset(0)
    env.set_game(0, np.array([[0, 0], [15, 2]]), np.array([[3, 1], [15, 15]]), np.array([True, False]), 0)
    frame = env.render(0)
    assert frame.shape == (16 * 24, 16 * 24, 3)
    cell = lambda x, y: frame[y * 24 + 12, x * 24 + 12]  # noqa: E731 - x right, y down
    assert (cell(0, 0) == GROUP_COLOURS[0]).all() and (cell(15, 2) == GROUP_COLOURS[0]).all()
    assert (cell(3, 1) == GROUP_COLOURS[1]).all()
    assert not (cell(15, 15) == GROUP_COLOURS[1]).all()  # a caught evader is gone
    assert (cell(8, 8) == LANDMARK).all()  # the building in the middle

    prey = PredatorPreyVectorEnv(1, x_size=5, y_size=5, n_predators=2, n_stags=1, n_hares=1)
    prey.reset(0)
    frame = prey.render(0)
    at = lambda index: frame[(index % 5) * 24 + 12, (index // 5) * 24 + 12]  # noqa: E731 - flat cell = x * y_size + y
    assert all((at(c) == GROUP_COLOURS[0]).all() for c in prey.predators[0])
    stag, hare = prey.prey[0]
    assert (at(stag) == GROUP_COLOURS[1]).all() and (at(hare) == GROUP_COLOURS[3]).all()


@pytest.mark.parametrize("name, settings", [("mpe2.simple_spread_v3", {"max_cycles": 5}), ("battle", {"map_size": 12}), ("atari", {"game": "pong"})])
def test_envs_behind_the_adapter_draw_through_their_own_render(name, settings):
    factory = dataclasses.replace(make_env_factory(name, settings), render_mode="rgb_array")
    venv = make_vector_env(factory, 2)
    try:
        venv.reset(0)
        frame = venv.render(1)
    finally:
        venv.close()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.std() > 0


def test_filming_keeps_the_first_episode_of_one_game_and_a_gif_or_webp_holds_it(tmp_path):
    from PIL import Image

    env = NavigationVectorEnv(2, max_cycles=6)
    filmed = Filmed(env, game=1)
    filmed.reset(3)
    for _ in range(9):  # past the first episode's end: the frames stop there
        filmed.step([np.full((2, 3, 2), 0.5, np.float32)])
    assert len(filmed.frames) == 6  # the states the 6 decisions were taken in
    assert not np.array_equal(filmed.frames[0], filmed.frames[5])
    for name in ("game.gif", "game.webp"):
        path = write_animation(filmed.frames, tmp_path / "sub" / name, fps=10)
        with Image.open(path) as animation:
            assert animation.format == name.split(".")[1].upper() and animation.size == (400, 400) and animation.n_frames >= 2


def test_what_cannot_draw_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"path ending in .gif or .webp, not game.mp4"):
        animation_path(tmp_path / "game.mp4")
    corridor = dataclasses.replace(make_env_factory("corridor", {}), render_mode="rgb_array")
    with pytest.raises(ConfigError, match=r"takes no render_mode .*relayrl eval --record draws cooperative-navigation.*for an env of your own"):
        make_vector_env(corridor, 1)

    class Undrawn:  # a user's vector env without render(game)
        num_envs = 1

    with pytest.raises(ConfigError, match="Undrawn cannot draw its games; relayrl eval --record draws cooperative-navigation"):
        Filmed(Undrawn())

    def mine(size: int = 3):  # a user's maker without render_mode
        raise AssertionError("not reached")

    with pytest.raises(ConfigError, match="mine takes no render_mode"):
        EnvFactory(mine, {"size": 3}, render_mode="rgb_array").make()


def test_lbf_and_rware_are_drawn_from_their_state_without_a_window():
    """Their own renderers open a pyglet window; relayrl draws the field and the floor."""
    def frame_of(env_id: str):
        factory = dataclasses.replace(make_env_factory("gym-multiagent", {"env_id": env_id}), render_mode="rgb_array")
        venv = make_vector_env(factory, 2)
        venv.reset(0)
        return venv, venv.render(1), venv.envs[1].env.env.unwrapped

    venv, frame, lbf = frame_of("Foraging-8x8-2p-2f-v3")
    try:
        cell = lambda x, y: frame[y * 24 + 12, x * 24 + 12]  # noqa: E731 - x right, y down
        assert frame.shape == (8 * 24, 8 * 24, 3)
        for player in lbf.players:  # players blue, food green, the rest background
            row, col = player.position
            assert cell(col, row)[2] > cell(col, row)[0]
        rows, cols = np.nonzero(lbf.field)
        assert len(rows) == 2 and all(cell(c, r)[1] > max(cell(c, r)[0], cell(c, r)[2]) for r, c in zip(rows, cols))
        empty = next((c, r) for r in range(8) for c in range(8) if lbf.field[r, c] == 0 and all(tuple(p.position) != (r, c) for p in lbf.players))
        assert (cell(*empty) == BACKGROUND).all()
    finally:
        venv.close()
    venv, frame, rware = frame_of("rware-tiny-2ag-v2")
    try:
        rows, cols = rware.grid_size
        assert frame.shape == (rows * 24, cols * 24, 3)
        cell = lambda x, y: frame[y * 24 + 12, x * 24 + 12]  # noqa: E731
        assert all((cell(x, y) == LANDMARK).all() for x, y in rware.goals)
        assert all((cell(robot.x, robot.y) == GROUP_COLOURS[0]).all() for robot in rware.agents)  # none carries a shelf yet
        assert all((cell(s.x, s.y) == GROUP_COLOURS[3]).all() for s in rware.request_queue if all((s.x, s.y) != (a.x, a.y) for a in rware.agents))
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Pendulum-v1"])
def test_gymnasium_copies_draw_a_games_agents_side_by_side(env_id):
    """Game e of K agents' copies is their K frames in a row; MuJoCo draws through EGL,
    without a display."""
    factory = dataclasses.replace(make_env_factory("gym", {"env_id": env_id, "n_agents": 2}), render_mode="rgb_array")
    venv = make_vector_env(factory, 2)
    try:
        venv.reset(0)
        frame = venv.render(1)
        alone = venv.envs[2].render()  # game 1's first copy
    finally:
        venv.close()
    assert frame.dtype == np.uint8 and frame.shape == (alone.shape[0], 2 * alone.shape[1], 3)
    assert np.array_equal(frame[:, : alone.shape[1]], alone) and frame.std() > 0
