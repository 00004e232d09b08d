"""``simple-spread`` against the installed ``mpe2.simple_spread_v3``, output by output:
observations, rewards, truncations and state over many seeds, random actions of both
kinds and crowded starts (so that collisions happen), and its runs through the config."""

import numpy as np
import pytest

from mpe2_lockstep import step_both
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.envs.spread import SpreadVectorEnv
from relayrl.experiment import build_config


def _start_from(ours: SpreadVectorEnv, game: int, reference, crowd: float) -> None:
    """Game ``game`` of ours takes the reference's world after its reset (agents crowded
    toward the centre by ``crowd``), in both."""
    world = reference.unwrapped.world
    for agent in world.agents:
        agent.state.p_pos = agent.state.p_pos * crowd
    ours.bodies.pos[game] = [a.state.p_pos for a in world.agents]
    ours.bodies.vel[game] = 0.0
    ours.targets[game] = [lm.state.p_pos for lm in world.landmarks]
    ours.frames[game] = 0


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("n", [3, 4])
def test_every_output_equals_mpe2s(continuous, n):
    from mpe2 import simple_spread_v3

    games, cycles = 6, 25
    ours = SpreadVectorEnv(games, N=n, continuous_actions=continuous, max_cycles=cycles)
    ours.reset(0)
    references = [simple_spread_v3.parallel_env(N=n, continuous_actions=continuous, max_cycles=cycles) for _ in range(games)]
    observed = []
    for g, reference in enumerate(references):
        obs, _ = reference.reset(seed=100 * n + g)
        _start_from(ours, g, reference, crowd=0.25 if g % 2 else 1.0)
        observed.append(np.stack([reference.unwrapped.observe(a) for a in reference.agents]))
    np.testing.assert_allclose(ours.observe()[0], np.stack(observed), rtol=0, atol=1e-6)
    rng = np.random.default_rng(n)
    collisions = 0
    for t in range(cycles):
        if continuous:
            actions = rng.uniform(0, 1, (games, n, 5)).astype(np.float32)
        else:
            actions = rng.integers(0, 5, (games, n))
        rewards_of_games, over = step_both(ours, references, [actions])
        collisions += sum(len(set(rewards.values())) > 1 for rewards in rewards_of_games)  # a collision penalty makes them differ
        assert over.tolist() == [t == cycles - 1] * games
    assert collisions > 0, "the check covered the collision penalty"


def test_shapes_episodes_and_bad_actions():
    env = SpreadVectorEnv(4, max_cycles=3)
    (first,) = env.reset(1)
    assert first.obs.shape == (4, 3, 18) and first.state.shape == (4, 54)
    for _ in range(3):
        (step,), over = env.step([np.zeros((4, 3), np.int64)])
    assert over.all() and step.truncated.all()
    episodes = env.drain_episodes()
    assert episodes.lengths == [3] * 4 and all(r[0] < 0 for r in episodes.returns)
    assert not np.allclose(step.obs, step.next_obs), "ended games restart from new positions"
    with pytest.raises(ValueError, match=r"integer moves in \[0, 5\)"):
        env.step([np.full((4, 3), 5)])
    with pytest.raises(ValueError, match=r"\[E, N, 5\]"):
        SpreadVectorEnv(2, continuous_actions=True).step([np.zeros((2, 3, 2))])


def test_settings_are_mpe2s_and_unknown_ones_fail_before_training():
    env = make_vector_env(make_env_factory("simple-spread", {"N": 4, "local_ratio": 0.0}), 2)
    (spec,) = env.groups
    assert spec.agent_ids == tuple(f"agent_{i}" for i in range(4)) and spec.n_actions == 5 and spec.obs_shape == (24,)
    with pytest.raises(ValueError, match="curriculum.*allowed here: N, continuous_actions, local_ratio, max_cycles, release$"):
        build_config({"env": {"name": "simple-spread", "settings": {"curriculum": True}}, "qmix": {}})


def test_a_saved_state_continues_exactly():
    env = SpreadVectorEnv(3, continuous_actions=True)
    env.reset(4)
    rng = np.random.default_rng(0)
    for _ in range(30):
        env.step([rng.uniform(0, 1, (3, 3, 5))])
    saved = env.get_state()
    actions = [rng.uniform(0, 1, (3, 3, 5)) for _ in range(30)]
    first = [env.step([a])[0][0].next_obs for a in actions]
    other = SpreadVectorEnv(3, continuous_actions=True)
    other.set_state(saved)
    second = [other.step([a])[0][0].next_obs for a in actions]
    np.testing.assert_array_equal(np.stack(first), np.stack(second))
    with pytest.raises(ValueError, match="not saved by simple-spread"):
        other.set_state({"kind": "cooperative-navigation"})


def _apart(env: SpreadVectorEnv) -> None:
    """Agents at rest, far from each other (no contact forces), landmarks at fixed spots."""
    env.reset(0)
    env.bodies.pos[:] = [[-0.8, -0.8], [0.8, -0.8], [0.0, 0.8]]
    env.bodies.vel[:] = 0.0
    env.targets[:] = [[0.1, 0.1], [0.2, 0.2], [0.3, 0.3]]


def test_pettingzoo_1_22_moves_by_the_new_velocity_mirrors_forces_and_counts_each_agent_colliding_with_itself():
    """HARL's MPE release against mpe2's, on one step from rest (the full lockstep against
    PettingZoo 1.22.3 is docs/results/centralised/pettingzoo_1_22_lockstep.py)."""
    mpe2, old = (SpreadVectorEnv(1, continuous_actions=True, release=r) for r in ("mpe2", "pettingzoo-1.22.2"))
    for env in (mpe2, old):
        _apart(env)
    still = np.zeros((1, 3, 5), np.float32)
    rewards = [env.step([still])[0][0].reward for env in (mpe2, old)]
    np.testing.assert_allclose(rewards[1], rewards[0] - 0.5, atol=1e-6)  # local_ratio 0.5 x the agent itself
    start = mpe2.bodies.pos.copy()
    push = np.zeros((1, 3, 5), np.float32)
    push[0, 0, 1] = 1.0  # agent 0's a1: -x in mpe2 (a2 - a1), +x in 1.22 (a1 - a2)
    mpe2.step([push]), old.step([push])
    np.testing.assert_allclose(mpe2.bodies.pos, start, atol=1e-12)  # mpe2 moves by the old velocity (0) first
    dx = 5.0 * 0.1 * 0.1  # acceleration x dt, then x dt: the new velocity's step
    np.testing.assert_allclose(old.bodies.pos[0, 0], start[0, 0] + [dx, 0.0], atol=1e-12)
    np.testing.assert_allclose(mpe2.bodies.vel[0, 0], [-0.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(old.bodies.vel[0, 0], [0.5, 0.0], atol=1e-12)
