"""Cooperative navigation (paper 004): MPE's physics step for step against the installed
``mpe2``, the occupancy reward, episodes of max_cycles steps, its PettingZoo face and
its state as data."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from relayrl.envs import make_env_factory, make_vector_env
from relayrl.envs.navigation import NavigationParallelEnv, NavigationVectorEnv


def _mpe_action(force: np.ndarray) -> np.ndarray:
    """A force in [-1, 1]^2 as mpe2's continuous action [no-op, -x, +x, -y, +y]."""
    return np.array([0.0, max(-force[0], 0), max(force[0], 0), max(-force[1], 0), max(force[1], 0)], np.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_physics_are_mpe_simple_spreads_step_for_step(seed):
    from mpe2 import simple_spread_v3

    reference = simple_spread_v3.parallel_env(N=3, max_cycles=60, continuous_actions=True)
    reference.reset(seed=seed)
    world = reference.unwrapped.world
    ours = NavigationVectorEnv(1, max_cycles=60)
    ours.reset(seed)
    # start from the reference's world, with the agents crowded so that they collide
    start = np.array([a.state.p_pos for a in world.agents]) * 0.2
    for agent, p in zip(world.agents, start):
        agent.state.p_pos = p.copy()
    ours.bodies.pos[0] = start
    rng = np.random.default_rng(seed)
    collided = False
    for _ in range(50):
        forces = rng.uniform(-1, 1, (3, 2)).astype(np.float32)  # what mpe2 reads
        reference.step({a: _mpe_action(f) for a, f in zip(reference.agents, forces)})
        ours.step([forces[None]])
        pos = np.array([a.state.p_pos for a in world.agents])
        vel = np.array([a.state.p_vel for a in world.agents])
        np.testing.assert_allclose(ours.bodies.pos[0], pos, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.bodies.vel[0], vel, rtol=0, atol=1e-12)
        gaps = np.sqrt(np.square(pos[:, None] - pos[None]).sum(-1))[np.triu_indices(3, 1)]
        collided |= bool((gaps < 0.3).any())
    assert collided, "the check covered contact forces"


def test_the_team_earns_one_per_occupied_target_per_step_and_episodes_last_max_cycles():
    env = NavigationVectorEnv(2, max_cycles=4)
    env.reset(0)
    env.bodies.pos[0] = env.targets[0]  # game 0: every target occupied
    env.bodies.pos[0, 2] = env.targets[0, 2] + 0.5  # ... but the third
    env.bodies.pos[1] = env.targets[1] + 0.5
    env.bodies.pos[1, 0] = env.targets[1, 1] + [0.05, 0.0]  # game 1: one target, by another agent's centre within 0.1
    for t in range(4):
        zero = np.zeros((2, 3, 2))
        steps, over = env.step([zero])
        if t == 0:
            assert steps[0].reward.sum(1).tolist() == pytest.approx([2.0, 1.0])  # split over the agents, summed: the team's
        assert over.tolist() == [t == 3] * 2
    assert steps[0].truncated.all() and not steps[0].terminated.any()
    episodes = env.drain_episodes()
    assert episodes.lengths == [4, 4]
    assert 0 < episodes.returns[1][0] < episodes.returns[0][0] <= 8.0
    assert not np.allclose(steps[0].obs, steps[0].next_obs), "ended games restart from new positions"


def test_observations_state_and_discrete_moves():
    env = NavigationVectorEnv(1, continuous_actions=False, collide=False)
    (first,) = env.reset(3)
    pos, vel, targets = env.bodies.pos[0].copy(), env.bodies.vel[0].copy(), env.targets[0].copy()
    assert first.obs.shape == (1, 3, 14) and first.state.shape == (1, 18)
    np.testing.assert_allclose(first.obs[0, 1, 2:4], pos[1], rtol=1e-6)
    np.testing.assert_allclose(first.obs[0, 1, 4:10].reshape(3, 2), targets - pos[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first.obs[0, 1, 10:14].reshape(2, 2), pos[[0, 2]] - pos[1], rtol=1e-5, atol=1e-6)
    (step,), _ = env.step([np.array([[2, 0, 3]])])  # +x, no-op, -y
    np.testing.assert_allclose(env.bodies.vel[0], vel + np.array([[0.5, 0], [0, 0], [0, -0.5]]))
    with pytest.raises(ValueError, match="integer moves"):
        env.step([np.array([[5, 0, 0]])])


def test_resuming_from_the_saved_state_replays_the_same_games():
    env = NavigationVectorEnv(4, max_cycles=7)
    env.reset(5)
    actions = np.random.default_rng(0).uniform(-1, 1, (20, 4, 3, 2))
    for a in actions[:9]:
        env.step([a])
    saved = env.get_state()
    later = [env.step([a])[0][0].next_obs for a in actions[9:]]
    again = NavigationVectorEnv(4, max_cycles=7)
    again.set_state(saved)
    for a, expected in zip(actions[9:], later):
        np.testing.assert_array_equal(again.step([a])[0][0].next_obs, expected)
    with pytest.raises(ValueError, match="different"):
        NavigationVectorEnv(3, max_cycles=7).set_state(saved)


def test_the_pettingzoo_face_passes_the_api_test_and_the_registry_builds_the_vector_env():
    parallel_api_test(NavigationParallelEnv(max_cycles=30), num_cycles=40)
    parallel_api_test(NavigationParallelEnv(max_cycles=30, continuous_actions=False), num_cycles=40)
    vector = make_vector_env(make_env_factory("cooperative-navigation", {"max_cycles": 10}), 3)
    (spec,) = vector.groups
    assert (spec.name, spec.n_agents, spec.continuous, spec.action_shape) == ("agent", 3, True, (2,))


def test_a_joint_agent_drives_every_entity_with_one_action():
    """Paper 004's third assignment: one agent whose observation is the entities' side by
    side and whose action is their forces together, earning the whole team reward."""
    joint, split = NavigationVectorEnv(2, joint_agent=True), NavigationVectorEnv(2)
    (first,), _ = joint.reset(4), split.reset(4)
    (spec,) = joint.groups
    assert (spec.agent_ids, spec.obs_shape, spec.action_shape) == (("team",), (42,), (6,))
    np.testing.assert_array_equal(first.obs, split.observe()[0].reshape(2, 1, 42))
    forces = np.random.default_rng(0).uniform(-1, 1, (2, 3, 2))
    (together,), _ = joint.step([forces.reshape(2, 1, 6)])
    (apart,), _ = split.step([forces])
    np.testing.assert_array_equal(together.next_obs, apart.next_obs.reshape(2, 1, 42))
    np.testing.assert_allclose(together.reward[:, 0], apart.reward.sum(1))
    parallel_api_test(NavigationParallelEnv(max_cycles=30, joint_agent=True), num_cycles=40)
    with pytest.raises(ValueError, match="continuous_actions=true"):
        NavigationVectorEnv(1, joint_agent=True, continuous_actions=False)


def test_walls_keep_agents_in_the_square_of_the_targets_and_stop_them_there():
    """``walls``: agents pushed outward for a whole episode end on the wall, at rest across
    it; without walls (MPE's physics) they leave the square. Agents that collide stay in it
    too, pinned together in a corner without a nan. The PettingZoo face steps the same
    physics."""
    walled, open_plane = (NavigationVectorEnv(4, walls=walls, collide=False, max_cycles=100) for walls in (True, False))
    crowded = NavigationVectorEnv(4, walls=True, max_cycles=100)
    for env in (walled, open_plane, crowded):
        env.reset(1)
    outward = np.tile(np.array([1.0, -1.0], np.float32), (4, 3, 1))
    for _ in range(50):
        for env in (walled, open_plane, crowded):
            env.step([outward])
    np.testing.assert_array_equal(walled.bodies.pos, np.tile([[[1.0, -1.0]]], (4, 3, 1)))
    np.testing.assert_array_equal(walled.bodies.vel, 0.0)
    assert (np.abs(open_plane.bodies.pos) > 5).all()
    assert np.isfinite(crowded.bodies.pos).all() and (np.abs(crowded.bodies.pos) <= 1).all()
    face = NavigationParallelEnv(walls=True, collide=False, max_cycles=100)
    face.reset(seed=1)
    for _ in range(50):
        face.step({a: np.array([-1.0, 1.0], np.float32) for a in face.agents})
    np.testing.assert_array_equal(face.game.bodies.pos, np.tile([[[-1.0, 1.0]]], (1, 3, 1)))


def test_observe_occupied_adds_each_targets_flag_to_every_observation():
    plain, flagged = NavigationVectorEnv(2), NavigationVectorEnv(2, observe_occupied=True)
    plain.reset(3), flagged.reset(3)
    flagged.targets[0, 1] = flagged.bodies.pos[0, 2]  # agent 2 of game 0 sits on target 1
    plain.targets[0, 1] = plain.bodies.pos[0, 2]
    (seen,) = flagged.observe()
    assert seen.shape == (2, 3, 14 + 3)
    np.testing.assert_array_equal(seen[..., :14], plain.observe()[0])
    np.testing.assert_array_equal(seen[..., 14:], np.broadcast_to(flagged.occupied()[:, None, :], (2, 3, 3)))
    assert seen[0, :, 15].all()
    parallel_api_test(NavigationParallelEnv(max_cycles=30, observe_occupied=True), num_cycles=40)
