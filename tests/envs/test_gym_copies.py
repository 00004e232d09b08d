"""K copies of a Gymnasium env as one K-agent env: seeds seed + k, lockstep equality with
K independent envs, independent resets with the final observation kept."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.envs.gym_copies import GymCopiesEnv
from env_arrays import split as _split


def _lockstep(env_id: str, k: int, steps: int, seed: int, **kwargs):
    copies = GymCopiesEnv(env_id, k, **kwargs)
    refs = [gym.make(env_id, **kwargs) for _ in range(k)]
    obs, alive = _split(copies.reset(seed))
    assert alive[0].all() and obs[0].shape == (1, k, *copies.groups[0].obs_shape) and obs[0].dtype == np.float32
    ref_obs = [r.reset(seed=seed + i)[0] for i, r in enumerate(refs)]
    np.testing.assert_array_equal(obs[0][0], np.stack(ref_obs).astype(np.float32))
    rng = np.random.default_rng(seed)
    ref_returns: list[list[float]] = [[] for _ in range(k)]
    running = np.zeros(k)
    resets_alone = 0
    for _ in range(steps):
        space = refs[0].action_space
        actions = np.stack([rng.uniform(space.low, space.high).astype(space.dtype) for _ in range(k)])
        (step,), over = copies.step([actions[None]])
        assert not over.any()
        ended = []
        for i, ref in enumerate(refs):
            o, r, term, trunc, _ = ref.step(actions[i])
            np.testing.assert_array_equal(step.next_obs[0, i], np.float32(o))
            assert step.reward[0, i] == np.float32(r)
            assert (step.terminated[0, i], step.truncated[0, i]) == (term, trunc)
            running[i] += r
            if term or trunc:
                ref_returns[i].append(running[i])
                running[i] = 0
                o, _ = ref.reset()
                ended.append(i)
            np.testing.assert_array_equal(step.obs[0, i], np.float32(o))
        resets_alone += 0 < len(ended) < k
    episodes = copies.drain_episodes()
    for i in range(k):
        mine = [float(r[0]) for r, a in zip(episodes.returns, episodes.agents) if a == i]
        np.testing.assert_allclose(mine, ref_returns[i], rtol=1e-9)
    return copies, resets_alone, sum(len(r) for r in ref_returns)


def test_copies_match_independent_envs_through_time_limits():
    copies, _, episodes = _lockstep("Pendulum-v1", 3, 450, seed=7)
    assert episodes == 6  # 200-step time limit, twice per copy
    spec = copies.groups[0]
    assert spec.continuous and spec.action_shape == (1,) and spec.action_low == (-2.0,) and spec.action_high == (2.0,)


def test_each_copy_resets_on_its_own():
    pytest.importorskip("Box2D")
    _, resets_alone, episodes = _lockstep("LunarLanderContinuous-v3", 4, 400, seed=3)
    assert episodes >= 4 and resets_alone > 0


def test_discrete_actions_are_described_too():
    spec = GymCopiesEnv("CartPole-v1", 2).groups[0]
    assert not spec.continuous and spec.n_actions == 2 and spec.agent_ids == ("agent_0", "agent_1")


@pytest.mark.parametrize(
    "env_id", ["HalfCheetah-v5", "Ant-v5", "Pendulum-v1", "LunarLanderContinuous-v3", "BipedalWalker-v3"]
)
def test_saved_state_continues_every_copy_exactly(env_id):
    """MuJoCo copies save all of MjData (Ant's observation reads contact forces that a reset
    does not recompute); classic-control envs pickle whole; Box2D worlds cannot be copied, so
    their copies replay the episode in flight from its seed (or RNG state) and actions."""
    box2d = "Lunar" in env_id or "Bipedal" in env_id
    if box2d:
        pytest.importorskip("Box2D")
    a = GymCopiesEnv(env_id, 2)
    a.reset(5)
    space = a.envs[0].action_space
    rng = np.random.default_rng(0)

    def actions() -> list[np.ndarray]:
        return [rng.uniform(space.low, space.high, (1, 2, *space.shape)).astype(np.float32)]

    for _ in range(150):
        a.step(actions())
    state = a.get_state()
    ended = a.drain_episodes()
    assert not box2d or ended.lengths  # the replay starts from an auto-reset's RNG state too
    b = GymCopiesEnv(env_id, 2)
    b.reset(99)
    b.set_state(state)
    for _ in range(1100):  # through at least one reset of every copy
        act = actions()
        (x,), _ = a.step(act)
        (y,), _ = b.step(act)
        for field in ("obs", "next_obs", "reward", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
    np.testing.assert_array_equal(np.array(a.drain_episodes().returns), np.array(b.drain_episodes().returns))


def test_evaluation_copies_are_batched():
    env = GymCopiesEnv("LunarLanderContinuous-v3", 2, num_envs=3)
    obs, alive = _split(env.reset(0))
    assert obs[0].shape == (3, 2, 8) and alive[0].shape == (3, 2)
    ref = gym.make("LunarLanderContinuous-v3")
    np.testing.assert_array_equal(obs[0][1, 1], np.float32(ref.reset(seed=0 + 1 * 2 + 1)[0]))  # copy (e, k): seed + e K + k
