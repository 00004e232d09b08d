"""TD3 for K agents in one batched call: equal to K separate learners, weighted losses,
exploration within bounds, exact state round trip."""

import copy

import numpy as np
import torch

from relayrl.algos.td3 import TD3, TD3Params

OBS, LOW, HIGH = 5, [-1.0, -2.0], [1.0, 2.0]
SETTINGS = TD3Params(hidden=(32, 32), policy_noise=0.0)  # no smoothing noise: separate learners draw it differently


def _batch(k: int, b: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.normal(size=(k, b, OBS)).astype(np.float32),
        "action": rng.uniform(LOW, HIGH, (k, b, 2)).astype(np.float32),
        "reward": rng.normal(size=(k, b)).astype(np.float32),
        "next_obs": rng.normal(size=(k, b, OBS)).astype(np.float32),
        "discount": np.where(rng.random((k, b)) < 0.1, 0.0, 0.99).astype(np.float32),
    }


def _slice(state: dict, i: int) -> dict:
    return {name: value[i : i + 1] for name, value in state.items()}


def test_batched_update_equals_separate_learners():
    k = 3
    batched = TD3(k, OBS, LOW, HIGH, SETTINGS, torch.device("cpu"), 0)
    singles = [TD3(1, OBS, LOW, HIGH, SETTINGS, torch.device("cpu"), 10 + i) for i in range(k)]
    for i, single in enumerate(singles):
        for part in ("actor", "critics", "actor_target", "critics_target"):
            getattr(single, part).load_state_dict(_slice(getattr(batched, part).state_dict(), i))
    rng = np.random.default_rng(1)
    for step in range(5):  # covers two actor steps (policy delay 2)
        batch, weights = _batch(k, 16, step), rng.uniform(0.1, 1.0, (k, 16)).astype(np.float32)
        batched.update(batch, weights)
        for i, single in enumerate(singles):
            single.update({n: v[i : i + 1] for n, v in batch.items()}, weights[i : i + 1])
    for i, single in enumerate(singles):
        for part in ("actor", "critics", "actor_target", "critics_target"):
            for name, value in getattr(single, part).state_dict().items():
                torch.testing.assert_close(value, getattr(batched, part).state_dict()[name][i : i + 1], atol=2e-6, rtol=1e-5)


def test_unit_weights_are_plain_td3():
    a = TD3(2, OBS, LOW, HIGH, SETTINGS, torch.device("cpu"), 0)
    b = TD3(2, OBS, LOW, HIGH, SETTINGS, torch.device("cpu"), 0)
    for step in range(4):
        batch = _batch(2, 32, step)
        a.update(batch)
        b.update(batch, np.ones((2, 32), np.float32))
    for p, q in zip(a.actor.parameters(), b.actor.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_exploration_stays_in_bounds_with_the_papers_noise():
    learner = TD3(2, OBS, LOW, HIGH, TD3Params(hidden=(16,)), torch.device("cpu"), 0)
    obs = np.zeros((2, 4000, OBS), np.float32)
    greedy, noisy = learner.act(obs, None, 0.0)[0], learner.act(obs, None, 1.0)[0]
    assert (noisy >= np.array(LOW) - 1e-6).all() and (noisy <= np.array(HIGH) + 1e-6).all()
    # away from the bounds the noise is rarely clipped: its std is 0.1 x the half-range
    away = (np.abs(greedy) < 0.5).all(-1)
    spread = (noisy - greedy)[away].std(axis=0)
    np.testing.assert_allclose(spread, [0.1, 0.2], rtol=0.1)


def test_state_round_trip_gives_identical_updates():
    settings = TD3Params(hidden=(16, 16))  # with smoothing noise: its generator is saved too
    a = TD3(2, OBS, LOW, HIGH, settings, torch.device("cpu"), 0)
    a.update(_batch(2, 8, 0))
    state = copy.deepcopy(a.state_dict())  # what a checkpoint holds
    b = TD3(2, OBS, LOW, HIGH, settings, torch.device("cpu"), 5)
    b.load_state_dict(state)
    for step in range(1, 4):
        a.update(_batch(2, 8, step))
        b.update(_batch(2, 8, step))
    for p, q in zip(a.critics.parameters(), b.critics.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_ddpg_is_td3_with_one_critic_and_no_delay():
    ddpg = TD3Params(hidden=(16,), policy_noise=0.0, noise_clip=0.0, policy_delay=1, twin_critics=False)
    learner = TD3(2, OBS, LOW, HIGH, ddpg, torch.device("cpu"), 0)
    assert len(learner.critics) == 1
    before = [p.detach().clone() for p in learner.actor.parameters()]
    _, metrics = learner.update(_batch(2, 8, 0))
    assert "actor_loss" in metrics  # the actor steps on every update
    assert any(not torch.equal(p, q) for p, q in zip(learner.actor.parameters(), before))
