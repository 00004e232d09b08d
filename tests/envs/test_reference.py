"""``simple-reference`` against the installed ``mpe2.simple_reference_v3``, output by output:
observations (the goal colours and the messages heard), rewards, truncations and the state
over several seeds and random actions of both kinds; saving and loading; bad actions."""

import numpy as np
import pytest

from mpe2_lockstep import step_both
from relayrl.envs.reference import ReferenceVectorEnv


def _start_from(ours: ReferenceVectorEnv, game: int, reference) -> None:
    """Game ``game`` of ours takes the reference's world after its reset."""
    world = reference.unwrapped.world
    ours.bodies.pos[game] = [a.state.p_pos for a in world.agents]
    ours.bodies.vel[game] = 0.0
    ours.targets[game] = [lm.state.p_pos for lm in world.landmarks]
    ours.goals[game] = [world.landmarks.index(a.goal_b) for a in world.agents]
    ours.said[game] = 0.0
    ours.frames[game] = 0


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("local_ratio", [0.5, 0.2])
def test_every_output_equals_mpe2s(continuous, local_ratio):
    from mpe2 import simple_reference_v3

    games, cycles = 6, 25
    ours = ReferenceVectorEnv(games, max_cycles=cycles, continuous_actions=continuous, local_ratio=local_ratio)
    ours.reset(0)
    references = [simple_reference_v3.parallel_env(max_cycles=cycles, continuous_actions=continuous, local_ratio=local_ratio) for _ in range(games)]
    observed = []
    for g, reference in enumerate(references):
        reference.reset(seed=g)
        _start_from(ours, g, reference)
        observed.append(np.stack([reference.unwrapped.observe(a) for a in reference.agents]))
    np.testing.assert_allclose(ours.observe()[0], np.stack(observed), rtol=0, atol=1e-6)
    assert len({tuple(goal) for goal in ours.goals.tolist()}) > 1, "the games drew different goals"
    rng = np.random.default_rng(3)
    for t in range(cycles):
        if continuous:
            actions = rng.uniform(0, 1, (games, 2, 15)).astype(np.float32)
        else:
            actions = rng.integers(0, 50, (games, 2))
        _, over = step_both(ours, references, [actions])
        assert over.tolist() == [t == cycles - 1] * games


def test_shapes_saved_state_and_bad_actions():
    env = ReferenceVectorEnv(3, max_cycles=4)
    (first,) = env.reset(2)
    (spec,) = env.groups
    assert first.obs.shape == (3, 2, 21) and first.state.shape == (3, 42) and spec.n_actions == 50
    rng = np.random.default_rng(0)
    for _ in range(6):
        env.step([rng.integers(0, 50, (3, 2))])
    saved = env.get_state()
    chosen = [rng.integers(0, 50, (3, 2)) for _ in range(10)]
    first_run = [env.step([a])[0][0].next_obs for a in chosen]
    other = ReferenceVectorEnv(3, max_cycles=4)
    other.set_state(saved)
    np.testing.assert_array_equal(np.stack(first_run), np.stack([other.step([a])[0][0].next_obs for a in chosen]))
    with pytest.raises(ValueError, match=r"move \+ 5 \* word in \[0, 50\)"):
        env.step([np.full((3, 2), 50)])
    with pytest.raises(ValueError, match=r"\[E, 2, 15\]"):
        ReferenceVectorEnv(2, continuous_actions=True).step([np.zeros((2, 2, 5))])
