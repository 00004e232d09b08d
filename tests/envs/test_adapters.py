"""Adapters: arrays with an agent axis round-trip to the wrapped env's own dict outputs."""

import numpy as np
import pytest
from gymnasium import spaces

from relayrl.envs import ParallelEnvAdapter, SubprocVectorEnv, SyncVectorEnv, make_env_factory
from relayrl.envs.corridor import CorridorEnv
from relayrl.envs.pursuit import PAPER_SETTINGS, make_pursuit
from env_arrays import split as _split


def _lockstep(reference, adapter, steps, seed, rng, draw=None):
    """Steps a bare env and the adapter-wrapped twin with the same actions; compares outputs.
    ``draw(group, rng)`` picks a group's actions (default uniform)."""
    draw = draw or (lambda g, rng: rng.integers(0, g.n_actions, g.n_agents))
    ref_obs, _ = reference.reset(seed=seed)
    obs, alive = _split(adapter.reset(seed=seed))
    assert {k: v for k, v in adapter.to_dicts(obs, alive).items()}.keys() == ref_obs.keys()
    for agent, value in adapter.to_dicts(obs, alive).items():
        np.testing.assert_array_equal(value, ref_obs[agent])
    for _ in range(steps):
        if not reference.agents:
            break
        actions = [draw(g, rng) for g in adapter.groups]
        ref_actions = {a: int(v) for a, v in adapter.to_dicts(actions, [np.ones(g.n_agents, bool) for g in adapter.groups]).items() if a in reference.agents}
        r_obs, r_rew, r_term, r_trunc, _ = reference.step(ref_actions)
        steps_out, done = adapter.step(actions)
        stepped = [np.isin(np.array(g.agent_ids), list(r_obs)) for g in adapter.groups]
        next_obs = [s.next_obs for s in steps_out]
        for agent, value in adapter.to_dicts(next_obs, stepped).items():
            np.testing.assert_array_equal(value, r_obs[agent])
        for field, ref in (("reward", r_rew), ("terminated", r_term), ("truncated", r_trunc)):
            arrays = [getattr(s, field) for s in steps_out]
            assert adapter.to_dicts(arrays, stepped) == pytest.approx(ref)
        alive_now = adapter.to_dicts([s.alive for s in steps_out], [np.ones(g.n_agents, bool) for g in adapter.groups])
        assert {a for a, v in alive_now.items() if v} == set(reference.agents)
        assert done == (not reference.agents)
    return reference


def test_pursuit_adapter_round_trip():
    rng = np.random.default_rng(0)
    _lockstep(make_pursuit(max_cycles=60), ParallelEnvAdapter(make_pursuit(max_cycles=60), {"pursuer": "uint8"}), 80, 3, rng)


def test_corridor_adapter_round_trip_with_agents_leaving():
    rng = np.random.default_rng(1)
    _lockstep(CorridorEnv(3, 3, 12), ParallelEnvAdapter(CorridorEnv(3, 3, 12)), 20, 0, rng)


def test_pursuit_observations_are_exact_in_uint8():
    env = make_pursuit()
    obs, _ = env.reset(seed=0)
    for _ in range(50):
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
        for value in obs.values():
            np.testing.assert_array_equal(value.astype(np.uint8).astype(np.float32), value)


def test_every_paper_setting_reaches_pursuit():
    env = make_pursuit()
    base = env.unwrapped.env
    expected = dict(PAPER_SETTINGS)
    assert expected["shared_reward"] is False  # PettingZoo's default is True
    for key, value in expected.items():
        assert getattr(base, key) == value, key
    assert base.local_ratio == 1.0  # rewards are each pursuer's own
    overridden = make_pursuit(x_size=9, n_evaders=3, surround=False).unwrapped.env
    assert (overridden.x_size, overridden.n_evaders, overridden.surround) == (9, 3, False)


def test_pursuit_rejects_unknown_setting():
    with pytest.raises(ValueError, match="n_evader"):
        make_pursuit(n_evader=3)


def _run(venv, steps, seed):
    rng = np.random.default_rng(seed)
    obs, alive = _split(venv.reset(seed))
    trace = [obs[0].copy()]
    for _ in range(steps):
        out, over = venv.step([rng.integers(0, 2, (venv.num_envs, venv.groups[0].n_agents))])
        trace += [out[0].obs.copy(), out[0].next_obs.copy(), out[0].reward.copy(), over.copy()]
    return trace


def test_vector_env_auto_resets_and_keeps_final_obs():
    factory = make_env_factory("corridor", {"n_agents": 2, "length": 3, "max_steps": 4})
    venv = SyncVectorEnv(factory, 3)
    obs, _ = _split(venv.reset(0))
    for t in range(4):
        out, over = venv.step([np.ones((3, 2), np.int64)])
    # right twice reaches the end (cell 2): episode over at step 2, auto-reset to cell 0
    venv2 = SyncVectorEnv(factory, 1)
    venv2.reset(0)
    venv2.step([np.ones((1, 2), np.int64)])
    out, over = venv2.step([np.ones((1, 2), np.int64)])
    assert over[0]
    assert out[0].next_obs[0, :, 2].all()  # final obs: at the last cell
    assert out[0].obs[0, :, 0].all() and out[0].alive.all()  # new episode: back at cell 0
    stats = venv2.drain_episodes()
    assert stats.lengths == [2] and stats.returns[0][0] == 2.0


def test_vector_env_seeds_are_distinct_and_reproducible():
    factory = make_env_factory("pursuit-pz", {"max_cycles": 20})
    a, b = SyncVectorEnv(factory, 3), SyncVectorEnv(factory, 3)
    obs_a, _ = _split(a.reset(7))
    obs_b, _ = _split(b.reset(7))
    np.testing.assert_array_equal(obs_a[0], obs_b[0])
    assert not np.array_equal(obs_a[0][0], obs_a[0][1])
    obs_c, _ = _split(SyncVectorEnv(factory, 3).reset(8))
    assert not np.array_equal(obs_a[0], obs_c[0])


def test_subprocess_vector_env_matches_sync():
    factory = make_env_factory("pursuit-pz", {"max_cycles": 15, "x_size": 8, "y_size": 8, "n_evaders": 3})
    sync = SyncVectorEnv(factory, 3)
    sub = SubprocVectorEnv(factory, 3, num_workers=2)
    try:
        for x, y in zip(_run(sync, 40, 5), _run(sub, 40, 5)):
            np.testing.assert_array_equal(x, y)
    finally:
        sub.close()


def test_vector_env_state_round_trip():
    """Copies of an env that saves its state (relayrl's corridor) continue exactly; copies of
    one that does not (PettingZoo's own pursuit) have no state, and a resume restarts them."""
    factory = make_env_factory("corridor", {"n_agents": 3, "length": 6, "max_steps": 9})
    venv = SyncVectorEnv(factory, 2)
    venv.reset(1)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, (30, 2, 3))
    _run_steps = lambda v, acts: [v.step([a])[0][0].next_obs.copy() for a in acts]
    _run_steps(venv, actions[:5])
    state = venv.get_state()
    first = _run_steps(venv, actions[5:])
    episodes = venv.drain_episodes()
    venv.set_state(state)
    second = _run_steps(venv, actions[5:])
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    assert episodes.lengths and venv.drain_episodes().lengths == episodes.lengths
    assert SyncVectorEnv(make_env_factory("pursuit-pz", {"max_cycles": 30}), 1).get_state() is None

def test_user_spaces_discrete_start_unbounded_box_and_a_wrong_observation_shape():
    """Discrete(n, start) actions reach the env as start..start+n-1 (a run trains on them and
    learns the rewarded one); Box actions without finite bounds are refused before
    training; an observation of another shape than its space names the agent and both."""
    from relayrl.core.errors import EnvError
    from relayrl.experiment import build_config, build_run

    def config(**settings):
        return build_config({"preset": "spaces", "env": {"name": "testenvs.spaces", "settings": settings, "num_envs": 2}, "total_steps": 600,
                             "report_interval": 600, "eval": {"interval": 600, "episodes": 2}, "model": {"hiddens": [16], "head_hidden": 16},
                             "dqn": {"learning_starts": 100, "buffer_size": 600, "batch_size": 8, "epsilon_steps": 300, "lr": 3e-3}})

    run = build_run(config(), None, verbose=False)
    rows = run.train()
    run.close()
    assert rows[-1]["eval_reward_mean"] == 2 * 10  # both agents take the env's action 1 at every step
    with pytest.raises(EnvError, match=r"relayrl needs finite bounds on Box actions .* give the action space the range the env accepts"):
        build_run(config(actions="unbounded"), None, verbose=False)
    with pytest.raises(EnvError, match=r"agent 'agent_0''s observation has shape \(5,\), its observation_space \(4,\)"):
        build_run(config(wrong_obs=True), None, verbose=False).train()


def test_multi_discrete_actions_are_one_choice_among_their_combinations():
    """MultiDiscrete([3, 2], start=[1, 0]): the learners choose among its 6 combinations (first
    choice slowest) and the env receives the choices themselves; a DQN run learns the one
    rewarded combination, (3, 0). Too many combinations are refused with the fix."""
    from relayrl.envs.flat_spaces import combinations
    from relayrl.experiment import build_config, build_run
    from testenvs.spaces import SpacesEnv

    adapter = ParallelEnvAdapter(SpacesEnv(actions="choices"))
    (group,) = adapter.groups
    assert group.n_actions == 6 and not group.continuous
    adapter.reset(seed=0)
    (step,), _ = adapter.step([np.array([4, 0])])  # combination 4 of (3, 2) is (2, 0): choices (3, 0) after the starts
    assert step.reward.tolist() == [1.0, 0.0]
    config = build_config({"preset": "choices", "env": {"name": "testenvs.spaces", "settings": {"actions": "choices"}, "num_envs": 2},
                           "total_steps": 800, "report_interval": 800, "eval": {"interval": 800, "episodes": 2},
                           "model": {"hiddens": [16], "head_hidden": 16},
                           "dqn": {"learning_starts": 100, "buffer_size": 800, "batch_size": 8, "epsilon_steps": 400, "lr": 3e-3}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert rows[-1]["eval_reward_mean"] == 2 * 10  # both agents choose (3, 0) at every step
    with pytest.raises(TypeError, match=r"has 10,000 combinations of choices; .* up to 4,096 .* give the env fewer choices"):
        combinations(spaces.MultiDiscrete([100, 100]))


def test_subprocess_copies_say_why_their_workers_cannot_start(tmp_path):
    """A factory that does not pickle is refused before any worker starts; a script that
    starts its run at import (no main guard) hears why its workers exited."""
    import subprocess
    import sys

    from relayrl.core.errors import ConfigError
    from relayrl.envs import EnvFactory

    with pytest.raises(ConfigError, match=r"env.vector=subproc sends the env's factory to worker processes, and it does not pickle .* "
                                          r"make the function that builds the env a module-level function"):
        SubprocVectorEnv(EnvFactory(lambda: CorridorEnv(n_agents=2), {}), 2)
    script = tmp_path / "unguarded.py"
    script.write_text("from relayrl.experiment import build_config, build_run\n"
                      "config = build_config({'preset': 'u', 'env': {'name': 'corridor', 'num_envs': 2, 'vector': 'subproc'}, 'total_steps': 20})\n"
                      "build_run(config, None, verbose=False).train()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1
    assert ("exited during reset_with_seeds with code 1. Worker processes import unguarded.py: if it starts the run at import, "
            "put that under `if __name__ == \"__main__\":`") in done.stderr


def test_images_are_read_height_width_channels_and_a_channels_first_shape_is_named(capsys):
    from relayrl.core.errors import ConfigError
    from relayrl.experiment import build_config, build_run

    def config(shape):
        return build_config({"preset": "images", "env": {"name": "testenvs.spaces", "settings": {"obs_shape": shape}}, "total_steps": 20, "eval": {"interval": 0}})

    build_run(config([4, 16, 16]), None, verbose=True).close()
    assert ("note: agent's observations (4, 16, 16) are read as images of 4x16 with 16 channels (height x width x channels): "
            "if the env puts channels first, transpose its observations") in capsys.readouterr().out
    with pytest.raises(ConfigError, match=r"images are read as height x width x channels: \(3, 16, 16\) has 16 channels; an env whose images put channels first needs them transposed"):
        build_run(config([3, 16, 16]), None, verbose=False)


def test_action_masks_in_infos_are_named_once_as_unread():
    from testenvs.spaces import SpacesEnv

    adapter = ParallelEnvAdapter(SpacesEnv(mask_in_infos=True))
    with pytest.warns(UserWarning, match=r"SpacesEnv gives action_mask in infos \(agents \['agent_0', 'agent_1'\]\), which relayrl does not read: "
                                         r"it reads masks from Dict observations"):
        adapter.reset(seed=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        adapter.reset(seed=1)  # once per env
        ParallelEnvAdapter(SpacesEnv()).reset(seed=0)


@pytest.mark.parametrize("observation", ["discrete", "dict", "tuple"])
def test_observations_that_are_not_boxes_are_read_flat_and_learnt_from(observation):
    """A Discrete cue reaches the learners as its one-hot vector, a Dict's or Tuple's parts
    side by side (``gymnasium.spaces.flatten``'s layout); a learner that reads them learns to
    answer every cue (greedy: 10 of 10 for both agents)."""
    from testenvs import cues

    from relayrl.experiment import build_config, build_run

    adapter = ParallelEnvAdapter(cues.parallel_env(observation=observation))
    (group,) = adapter.groups
    read = adapter.reset(seed=3)[0].obs
    twin = cues.parallel_env(observation=observation)
    raw, _ = twin.reset(seed=3)
    assert group.obs_shape == {"discrete": (3,), "dict": (5,), "tuple": (5,)}[observation]
    np.testing.assert_array_equal(read, np.stack([spaces.flatten(twin.observation_space(a), raw[a]) for a in twin.possible_agents]))
    config = build_config({"preset": "cues", "env": {"name": "testenvs.cues", "settings": {"observation": observation}, "num_envs": 2}, "total_steps": 1200,
                           "report_interval": 1200, "eval": {"interval": 1200, "episodes": 2}, "model": {"hiddens": [32], "head_hidden": 32},
                           "dqn": {"learning_starts": 100, "buffer_size": 1200, "batch_size": 16, "epsilon_steps": 600, "lr": 3e-3, "gamma": 0.5}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert rows[-1]["eval_reward_mean"] == 2 * 10


class _Prefixes(CorridorEnv):
    """Agents ``agent_0`` (4 numbers), ``agent2_0`` (4) and ``agent_1`` (6): the second group
    of the prefix ``agent`` must not take the name of the group ``agent2``."""

    def __init__(self) -> None:
        super().__init__(3, 5, 12)
        self.possible_agents = ["agent_0", "agent2_0", "agent_1"]

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (6 if agent == "agent_1" else 4,), np.float32)


def test_groups_of_one_prefix_are_named_apart_from_every_other_group():
    groups = ParallelEnvAdapter(_Prefixes()).groups
    assert [(g.name, g.agent_ids) for g in groups] == [("agent", ("agent_0",)), ("agent2", ("agent2_0",)), ("agent3", ("agent_1",))]
