"""A batched N-agent update equals N separate single-agent updates.

The reference is built from torch's own layers (nn.Conv2d on NCHW, nn.Linear), Adam and
clip_grad_norm_, one agent at a time, from the same initial weights and batches.
"""

import numpy as np
import pytest
import torch
from torch import nn

from relayrl.algos.dqn import DQN
from relayrl.algos.sections import DQNConfig
from relayrl.nets.model_config import ModelConfig

OBS = (7, 7, 3)
N_ACTIONS = 5


class ReferenceQ(nn.Module):
    """One agent's SPEC §1.1 network with standard torch layers."""

    def __init__(self, dueling: bool) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 32, 2), nn.Conv2d(32, 64, 2), nn.Conv2d(64, 64, 2)])
        self.fc1, self.fc2 = nn.Linear(1024, 64), nn.Linear(64, 256)
        self.a1, self.a2 = nn.Linear(256, 256), nn.Linear(256, N_ACTIONS)
        self.dueling = dueling
        if dueling:
            self.v1, self.v2 = nn.Linear(256, 256), nn.Linear(256, 1)

    def forward(self, obs):
        x = obs.float().permute(0, 3, 1, 2)
        for conv in self.convs:
            x = torch.relu(conv(x))
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)  # channel-last flatten, as relayrl
        x = self.fc2(torch.relu(self.fc1(x)))
        a = self.a2(torch.relu(self.a1(x)))
        if not self.dueling:
            return a
        return self.v2(torch.relu(self.v1(x))) + a - a.mean(dim=-1, keepdim=True)


def _copy_agent(stacked: nn.Module, ref: ReferenceQ, i: int) -> None:
    """Loads agent i's slice of the stacked parameters into the reference network."""
    with torch.no_grad():
        for conv, ref_conv in zip(stacked.convs, ref.convs):
            k = conv.kernel_size
            w = conv.weight[i].reshape(k, k, ref_conv.in_channels, ref_conv.out_channels)
            ref_conv.weight.copy_(w.permute(3, 2, 0, 1))
            ref_conv.bias.copy_(conv.bias[i, 0])
        pairs = [(stacked.fcs[0], ref.fc1), (stacked.fcs[1], ref.fc2), (stacked.advantage[0], ref.a1), (stacked.advantage[2], ref.a2)]
        if ref.dueling:
            pairs += [(stacked.value[0], ref.v1), (stacked.value[2], ref.v2)]
        for layer, ref_layer in pairs:
            ref_layer.weight.copy_(layer.weight[i].T)
            ref_layer.bias.copy_(layer.bias[i, 0])


def _reference_update(ref, target, batch, weights, settings: DQNConfig):
    obs, action, reward, next_obs, discount = (torch.as_tensor(batch[k]) for k in ("obs", "action", "reward", "next_obs", "discount"))
    q = ref(obs).gather(1, action.long()[:, None]).squeeze(1)
    with torch.no_grad():
        if settings.double_q:
            best = ref(next_obs).argmax(dim=1, keepdim=True)
            next_v = target(next_obs).gather(1, best).squeeze(1)
        else:
            next_v = target(next_obs).max(dim=1).values
        y = reward + discount * next_v
    td = q - y
    loss = (torch.as_tensor(weights) * torch.nn.functional.huber_loss(q, y, reduction="none", delta=1.0)).mean()
    return td.detach(), loss


@pytest.mark.parametrize("double_q,dueling", [(True, True), (False, False)])
def test_batched_update_equals_separate_updates(double_q, dueling):
    n_agents, batch_size, steps = 4, 16, 3
    settings = DQNConfig(lr=1e-3, double_q=double_q, dueling=dueling, grad_clip=0.2)
    learner = DQN(n_agents, OBS, N_ACTIONS, settings, ModelConfig(), torch.device("cpu"), seed=0)
    # different rewards scales per agent: clipping active for some agents, not for others
    scales = np.array([0.0, 0.01, 30.0, 100.0], np.float32)
    refs, targets, optims = [], [], []
    for i in range(n_agents):
        ref, target = ReferenceQ(dueling), ReferenceQ(dueling)
        _copy_agent(learner.online, ref, i)
        _copy_agent(learner.target, target, i)
        refs.append(ref)
        targets.append(target)
        optims.append(torch.optim.Adam(ref.parameters(), lr=settings.lr, eps=settings.adam_eps))
    rng = np.random.default_rng(0)
    clipped = np.zeros(n_agents, bool)
    for _ in range(steps):
        batch = {
            "obs": rng.integers(0, 4, (n_agents, batch_size, *OBS)).astype(np.uint8),
            "action": rng.integers(0, N_ACTIONS, (n_agents, batch_size)).astype(np.uint8),
            "reward": (rng.normal(size=(n_agents, batch_size)) * scales[:, None]).astype(np.float32),
            "next_obs": rng.integers(0, 4, (n_agents, batch_size, *OBS)).astype(np.uint8),
            "discount": rng.choice([0.0, 0.99], (n_agents, batch_size)).astype(np.float32),
        }
        weights = rng.uniform(0.2, 1.0, (n_agents, batch_size)).astype(np.float32)
        td, _ = learner.update(batch, weights)
        for i in range(n_agents):
            agent_batch = {k: v[i] for k, v in batch.items()}
            ref_td, loss = _reference_update(refs[i], targets[i], agent_batch, weights[i], settings)
            np.testing.assert_allclose(td[i], ref_td.numpy(), rtol=1e-4, atol=1e-4)
            optims[i].zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(refs[i].parameters(), settings.grad_clip)
            clipped[i] |= float(norm) > settings.grad_clip
            optims[i].step()
    assert clipped.any() and not clipped.all(), f"clipping should differ across agents, got {clipped}"
    for i in range(n_agents):
        check = ReferenceQ(dueling)
        _copy_agent(learner.online, check, i)
        # Adam divides by sqrt(v): where a gradient is near zero, rounding that differs between
        # the batched and the per-agent kernels (it depends on the CPU's vector width) moves a
        # weight by a small fraction of lr per step; a wrong update moves it by about lr.
        for p, q in zip(check.parameters(), refs[i].parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=0.1 * settings.lr)


def test_param_sharing_is_one_set_with_a_large_batch():
    learner = DQN(1, OBS, N_ACTIONS, DQNConfig(), ModelConfig(), torch.device("cpu"), seed=0)
    obs = np.zeros((1, 8 * 32, *OBS), np.uint8)
    assert learner.act(obs, None, 0.0)[0].shape == (1, 256)


def test_act_is_greedy_at_zero_epsilon_and_random_at_one():
    learner = DQN(3, OBS, N_ACTIONS, DQNConfig(), ModelConfig(), torch.device("cpu"), seed=1)
    obs = np.random.default_rng(0).integers(0, 3, (3, 50, *OBS)).astype(np.uint8)
    greedy = learner.act(obs, None, 0.0)[0]
    with torch.no_grad():
        expected = learner.online(torch.as_tensor(obs)).argmax(-1).numpy()
    np.testing.assert_array_equal(greedy, expected)
    random_actions = learner.act(np.repeat(obs[:, :1], 2000, axis=1), None, 1.0)[0]
    counts = np.bincount(random_actions.ravel(), minlength=N_ACTIONS) / random_actions.size
    np.testing.assert_allclose(counts, 1 / N_ACTIONS, atol=0.02)


@pytest.mark.parametrize("double_q", [True, False])
def test_td_error_equals_the_reference_per_agent(double_q):
    """The relay's |td| (SPEC §1.1 step 2): current online and target networks, no update."""
    n_agents, batch_size = 3, 5
    settings = DQNConfig(double_q=double_q)
    learner = DQN(n_agents, OBS, N_ACTIONS, settings, ModelConfig(), torch.device("cpu"), seed=2)
    rng = np.random.default_rng(1)
    learner.online.load_state_dict({k: v + 0.01 * torch.randn_like(v) for k, v in learner.online.state_dict().items()})
    batch = {
        "obs": rng.integers(0, 4, (n_agents, batch_size, *OBS)).astype(np.uint8),
        "action": rng.integers(0, N_ACTIONS, (n_agents, batch_size)).astype(np.uint8),
        "reward": rng.normal(size=(n_agents, batch_size)).astype(np.float32),
        "next_obs": rng.integers(0, 4, (n_agents, batch_size, *OBS)).astype(np.uint8),
        "discount": rng.choice([0.0, 0.99], (n_agents, batch_size)).astype(np.float32),
    }
    td = learner.td_error(batch)
    for i in range(n_agents):
        ref, target = ReferenceQ(True), ReferenceQ(True)
        _copy_agent(learner.online, ref, i)
        _copy_agent(learner.target, target, i)
        ref_td, _ = _reference_update(ref, target, {k: v[i] for k, v in batch.items()}, np.ones(batch_size, np.float32), settings)
        np.testing.assert_allclose(td[i], ref_td.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("double_q", [True, False])
def test_masked_targets_and_actions_stay_within_the_allowed_actions(double_q):
    """With ``next_action_mask`` the target's max (or double-Q argmax) runs over the allowed
    actions of next_obs; a row that allows nothing (an ended episode) keeps all; acting,
    greedy or random, picks only allowed actions."""
    settings = DQNConfig(double_q=double_q)
    learner = DQN(2, OBS, N_ACTIONS, settings, ModelConfig(), torch.device("cpu"), seed=3)
    learner.online.load_state_dict({k: v + 0.05 * torch.randn_like(v) for k, v in learner.online.state_dict().items()})
    rng = np.random.default_rng(4)
    batch = {
        "obs": rng.integers(0, 4, (2, 6, *OBS)).astype(np.uint8),
        "action": rng.integers(0, N_ACTIONS, (2, 6)).astype(np.uint8),
        "reward": np.zeros((2, 6), np.float32),
        "next_obs": rng.integers(0, 4, (2, 6, *OBS)).astype(np.uint8),
        "discount": np.ones((2, 6), np.float32),
    }
    mask = rng.random((2, 6, N_ACTIONS)) < 0.5
    mask[0, 0] = False  # allows nothing: every action counts
    mask[:, 1:, 1] = True  # at least one allowed elsewhere
    with torch.no_grad():
        q = learner.online(torch.as_tensor(batch["obs"])).gather(-1, torch.as_tensor(batch["action"]).long()[..., None])[..., 0].numpy()
        next_online = learner.online(torch.as_tensor(batch["next_obs"])).numpy()
        next_target = learner.target(torch.as_tensor(batch["next_obs"])).numpy()
    allowed = mask | ~mask.any(-1, keepdims=True)
    if double_q:
        best = np.where(allowed, next_online, -np.inf).argmax(-1)
        next_value = np.take_along_axis(next_target, best[..., None], -1)[..., 0]
    else:
        next_value = np.where(allowed, next_target, -np.inf).max(-1)
    np.testing.assert_allclose(learner.td_error({**batch, "next_action_mask": mask}), q - next_value, rtol=1e-5, atol=1e-5)
    assert not np.allclose(learner.td_error(batch), q - next_value)  # unmasked: another target
    for epsilon in (0.0, 1.0):
        acted, _ = learner.act(np.repeat(batch["obs"], 50, axis=1), None, epsilon, np.repeat(mask, 50, axis=1))
        chosen = np.take_along_axis(np.repeat(allowed, 50, axis=1), acted[..., None], -1)
        assert chosen[:, 50:].all()  # row 0 of agent 0 allows nothing and acts anyway
