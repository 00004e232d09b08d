"""The vectorised Predator-Prey against a plain per-game implementation written from SPEC §1.3
(tests/predator_prey_reference.py): same spawn cells and random draws, every output equal,
over several settings; and its PettingZoo face."""

import numpy as np
import pytest

from predator_prey_reference import ReferenceGame
from relayrl.envs.predator_prey import Draws, PredatorPreyVectorEnv

SETTINGS = [
    {},  # SPEC §1.3: 10x10, 8 predators, 8 stags
    {"reward_stag": 10.0, "miscapture": -1.5, "max_cycles": 40},
    {"x_size": 6, "y_size": 7, "n_predators": 4, "n_stags": 2, "n_hares": 3, "view": 1, "p_stag_rest": 0.3, "p_hare_rest": 0.5,
     "reward_hare": 2.0, "miscapture": -2.0, "reward_time": -0.1, "max_cycles": 30},
    {"n_predators": 6, "n_stags": 3, "n_hares": 2, "remove_frozen": False, "observe_walls": False, "catch_stag": 3, "max_cycles": 50},
    {"x_size": 5, "y_size": 5, "n_predators": 3, "n_stags": 0, "n_hares": 4, "freeze_on_capture": False, "max_cycles": 25},
    # crowded: long chains of moves that wait on the ones before them, predators between two prey
    {"x_size": 5, "y_size": 5, "n_predators": 9, "n_stags": 6, "n_hares": 4, "p_stag_rest": 0.1, "miscapture": -1.0, "max_cycles": 60},
]


def _actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Catch where allowed most of the time, else a random allowed action."""
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    keys[..., 5] = np.where(mask[..., 5] & (rng.random(mask.shape[:-1]) < 0.7), 2.0, keys[..., 5])
    return keys.argmax(axis=-1)


@pytest.mark.parametrize("settings", SETTINGS)
def test_every_output_equals_the_plain_implementation(settings):
    games, steps = 5, 210  # past the default 200-step limit
    env = PredatorPreyVectorEnv(games, **settings)
    rng = np.random.default_rng(7)
    (first,) = env.reset(3)
    refs = [ReferenceGame(env.s) for _ in range(games)]
    cells = np.concatenate([env.predators, env.prey], axis=1)  # flat cell indices
    for e, ref in enumerate(refs):
        ref.spawn(cells[e])
    seen = {"captures": 0, "miscaptures": 0, "terminated": 0, "truncated": 0, "frozen": 0}

    def check(observed_obs, state, mask, where):
        for e, ref in enumerate(refs):
            for i in range(env.N):
                np.testing.assert_array_equal(observed_obs[e, i], ref.observation(i), err_msg=f"{where} game {e} predator {i}")
                np.testing.assert_array_equal(mask[e, i], ref.mask(i), err_msg=f"{where} mask game {e} predator {i}")
            np.testing.assert_array_equal(state[e], ref.state(), err_msg=f"{where} state game {e}")

    check(first.obs, first.state, first.action_mask, "reset")
    mask = first.action_mask
    for t in range(steps):
        actions = _actions(mask, rng)
        draws = Draws.sample(rng, games, env.N, env.M)
        respawn = env.spawn_cells(games)
        (step,), over = env.step_with_draws(actions, draws, respawn)
        for e, ref in enumerate(refs):
            alive_before = sum(ref.alive)
            reward, terminated, truncated = ref.step(actions[e], draws.predator_order[e], draws.prey_order[e], draws.rest[e], draws.move[e])
            where = f"step {t} game {e}"
            np.testing.assert_allclose(step.reward[e], reward / env.N, rtol=1e-6, err_msg=where)
            assert (step.terminated[e].all(), step.truncated[e].all(), over[e]) == (terminated, truncated, terminated or truncated), where
            seen["captures"] += alive_before - sum(ref.alive)
            seen["miscaptures"] += reward < env.s.reward_time - 1e-9
            seen["terminated"] += terminated
            seen["truncated"] += truncated
            seen["frozen"] += sum(ref.frozen)
        check(step.next_obs, step.next_state, step.next_action_mask, f"step {t}")
        for e in np.flatnonzero(over):
            refs[e].spawn(respawn[e])
        check(step.obs, step.state, step.action_mask, f"after step {t}")
        mask = step.action_mask
    assert seen["captures"] > 0 and seen["terminated"] + seen["truncated"] > 0
    assert (seen["frozen"] > 0) == env.s.freeze_on_capture and (seen["miscaptures"] > 0) == (env.s.miscapture < 0)


def test_defaults_are_the_spec_setting():
    env = PredatorPreyVectorEnv(2)
    s = env.s
    assert (s.x_size, s.y_size, s.n_predators, s.n_stags, s.n_hares, s.view, s.catch_stag, s.max_cycles) == (10, 10, 8, 8, 0, 2, 2, 200)
    assert (s.reward_stag, s.miscapture, s.freeze_on_capture, s.remove_frozen) == (1.0, 0.0, True, True)
    (spec,) = env.groups
    assert spec.obs_shape == (5, 5, 3) and spec.n_actions == 6 and spec.masked and spec.n_agents == 8


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="do not fit"):
        PredatorPreyVectorEnv(1, x_size=3, y_size=3, n_predators=8, n_stags=8)
    with pytest.raises(ValueError, match="no_such_setting"):
        PredatorPreyVectorEnv(1, no_such_setting=1)


@pytest.mark.parametrize("settings", [{}, {"n_predators": 3, "n_stags": 1, "n_hares": 1, "max_cycles": 20, "miscapture": -1.5}])
def test_the_pettingzoo_face_passes_the_parallel_api_test(settings):
    import warnings

    from pettingzoo.test import parallel_api_test

    from relayrl.envs.predator_prey_pz import PredatorPreyParallelEnv

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(PredatorPreyParallelEnv(**settings), num_cycles=300)


def test_both_forms_train_under_their_masks():
    """``predator-prey`` (E games as arrays) and ``predator-prey-pz`` (the PettingZoo face
    through the adapter) give the same spaces, state and masks, and a DQN acts within them."""
    from relayrl.experiment import build_run, build_config

    for name in ("predator-prey", "predator-prey-pz"):
        config = build_config({
            "env": {"name": name, "num_envs": 3, "settings": {"max_cycles": 30}},
            "total_steps": 300, "report_interval": 150, "eval": {"interval": 300, "episodes": 2},
            "model": {"conv_channels": [], "hiddens": [32], "head_hidden": 32},
            "dqn": {"learning_starts": 90, "buffer_size": 600, "batch_size": 8},
        })
        run = build_run(config, None, verbose=False)
        (spec,) = run.venue.venv.groups
        assert (spec.obs_shape, spec.obs_dtype, spec.n_actions, spec.masked) == ((5, 5, 3), np.dtype(np.int8), 6, True)
        run.start()
        fragment = run.collector.collect(run.n_steps, 0).fragments["predator"]
        assert fragment["action_mask"].shape[-1] == 6
        # the PettingZoo face asks the game for state() only where a learner reads it (not DQN)
        assert ("state" in fragment) == (name == "predator-prey") and fragment.get("state", np.zeros((1, 300))).shape[-1] == 300
        assert np.take_along_axis(fragment["action_mask"], fragment["action"][..., None], -1).all()
        assert "next_action_mask" in run.learners["predator"].fields
        rows = run.train()
        run.close()
        assert rows[-1]["env_steps"] == 300 and np.isfinite(rows[-1]["eval_reward_mean"])


def test_state_round_trip_continues_exactly():
    """The saved state holds positions, flags and counters; the grid is rebuilt from them."""
    env = PredatorPreyVectorEnv(4, n_predators=6, n_stags=4, max_cycles=30)
    (first,) = env.reset(3)
    rng = np.random.default_rng(0)
    mask = first.action_mask
    for _ in range(25):
        (step,), _ = env.step([_actions(mask, rng)])
        mask = step.action_mask
    saved = env.get_state()
    copy = PredatorPreyVectorEnv(4, n_predators=6, n_stags=4, max_cycles=30)
    copy.set_state(saved)
    for _ in range(40):
        actions = _actions(mask, rng)
        (want,), over = env.step([actions])
        (got,), got_over = copy.step([actions])
        for field in ("obs", "next_obs", "reward", "state", "action_mask", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
        np.testing.assert_array_equal(got_over, over)
        mask = want.action_mask
    assert copy.drain_episodes().returns == env.drain_episodes().returns
    with pytest.raises(ValueError, match="different predator-prey settings"):
        PredatorPreyVectorEnv(4, n_predators=6, n_stags=4, max_cycles=31).set_state(saved)
    with pytest.raises(ValueError, match="occupancy grid"):  # as saved before the grid was rebuilt from the positions
        copy.set_state({**saved, "arrays": (*saved["arrays"][:4], np.zeros(1), np.zeros(1), *saved["arrays"][4:])})
