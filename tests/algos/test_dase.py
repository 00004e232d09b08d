"""DASE update: K agents, one shared replay, DPS-weighted external transitions."""

import numpy as np
import torch

from relayrl.algos.td3 import TD3, TD3Params
from relayrl.replay import FieldSpec, ReplayBuffer
from relayrl.sharing.corrections import DPSCorrection, DPSParams

OBS, LOW, HIGH = 4, [-1.0, -1.0], [1.0, 1.0]
FIELDS = {
    "obs": FieldSpec((OBS,), np.float32),
    "action": FieldSpec((2,), np.float32),
    "reward": FieldSpec((), np.float32),
    "next_obs": FieldSpec((OBS,), np.float32),
    "discount": FieldSpec((), np.float32),
    "agent": FieldSpec((), np.uint8),
}


def _learner() -> TD3:
    return TD3(2, OBS, LOW, HIGH, TD3Params(hidden=(16, 16), policy_noise=0.0), torch.device("cpu"), 0)


def _shared_replay(learner: TD3, far_agent: int | None, seed: int = 0) -> ReplayBuffer:
    """200 rows from each agent: actions are the collector's policy plus exploration noise,
    or, for ``far_agent``, a policy shifted by 0.8 in every action dimension."""
    rng = np.random.default_rng(seed)
    replay = ReplayBuffer(1, 1000, FIELDS, seed=seed)
    for agent in (0, 1):
        obs = rng.normal(size=(200, OBS)).astype(np.float32)
        with torch.no_grad():
            policy = learner.policy(torch.as_tensor(np.broadcast_to(obs, (2, 200, OBS)).copy()))[agent].numpy()
        action = np.clip(policy + rng.normal(0, 0.1, policy.shape), -1, 1)
        if agent == far_agent:
            action = np.clip(policy + 0.8 + rng.normal(0, 0.1, policy.shape), -1, 1)
        rows = {
            "obs": obs,
            "action": action.astype(np.float32),
            "reward": rng.normal(size=200).astype(np.float32),
            "next_obs": rng.normal(size=(200, OBS)).astype(np.float32),
            "discount": np.full(200, 0.99, np.float32),
            "agent": np.full(200, agent, np.uint8),
        }
        replay.add({k: v[None] for k, v in rows.items()})
    return replay


def dase_update(algorithm: TD3, replay: ReplayBuffer, batch_size: int, settings: DPSParams) -> dict[str, float]:
    """One DASE step as a learner on a shared replay takes it: K draws at once, weights from
    the correction, one update of all K agents."""
    k = algorithm.n_sets
    data = {name: value.reshape(k, batch_size, *value.shape[2:]) for name, value in replay.sample(k * batch_size).data.items()}
    weights = DPSCorrection(settings, torch.device("cpu"), 0).weights(data, algorithm.scale, np.arange(k))
    _, metrics = algorithm.update(data, weights.for_update())
    return {**metrics, **weights.metrics()}


def test_es_dase_is_plain_td3_on_each_agents_share_of_the_batch():
    a, b = _learner(), _learner()
    replay_a, replay_b = _shared_replay(a, None), _shared_replay(b, None)
    metrics = dase_update(a, replay_a, 32, DPSParams(divergence="none"))
    sampled = replay_b.sample(2 * 32).data
    b.update({k: v.reshape(2, 32, *v.shape[2:]) for k, v in sampled.items()})
    for p, q in zip(a.critics.parameters(), b.critics.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert metrics["dps_weight"] == 1.0 and 0.3 < metrics["external_fraction"] < 0.7


def test_transitions_of_a_different_policy_are_down_weighted():
    learner = _learner()
    replay = _shared_replay(learner, far_agent=1)
    metrics = dase_update(learner, replay, 128, DPSParams(divergence="sym_kl", reference_cov="std_squared"))
    assert metrics["dps_weight/0"] < 1e-3  # agent 0 sees agent 1's far-off actions
    jsd = dase_update(_learner(), _shared_replay(_learner(), far_agent=1), 128, DPSParams(divergence="jsd"))
    assert 0.5 - 0.01 <= jsd["dps_weight/0"] < 0.6  # JSD <= ln 2: weights stay >= 1/2
