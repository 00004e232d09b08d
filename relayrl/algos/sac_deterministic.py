"""SAC with a deterministic actor (paper 001, appendix C.4; Haarnoja et al. 2018, section
5.2's deterministic variant) for P agents in batched calls, with DASE's weighted losses.

The deterministic variant drops the entropy term and keeps SAC's structure: a state-value
network V with a soft target V', twin critics trained towards V' and no target actor.
Exploration is Gaussian noise of std 0.1 on the actor's actions (paper 001, C.4). Per
agent, with per-transition weights w:

    y = reward_scale * r + discount * V'(s')
    critic loss = sum_j sum_b w_b (Q_j(s_b, a_b) - y_b)^2 / sum_b w_b
    value loss  = sum_b w_b (V(s_b) - min_j Q_j(s_b, pi(s_b)))^2 / sum_b w_b
    actor loss  = -sum_b w_b Q_1(s_b, pi(s_b)) / sum_b w_b

Hyperparameters (paper 001, Table 2, SAC column): Adam 3e-4 everywhere, 256-256 ReLU MLPs,
tau 0.005 on V' every step, reward scale 5 (20 for Humanoid).
"""

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from relayrl.algos.sections import ActorCriticConfig
from relayrl.algos.actor_critic import (
    DeterministicActor,
    StackedMLP,
    critic_input,
    flat_obs_dim,
    soft_update,
    weighted_mean,
)
from relayrl.algos.algorithm import Weights
from relayrl.core.specs import GroupSpec
from relayrl.nets.subnormals import optimizer_step


@dataclass(frozen=True)
class DeterministicSACParams:
    lr: float = 3e-4
    hidden: tuple[int, ...] = (256, 256)
    tau: float = 0.005
    exploration_noise: float = 0.1
    reward_scale: float = 5.0
    normalize_obs: bool = False
    pixels: bool = False  # the env's observations are 8-bit intensities (GroupSpec.pixels)


class DeterministicSAC(DeterministicActor):
    """P deterministic-SAC agents with stacked parameters; arrays are ``[P, B, ...]``."""

    def __init__(
        self,
        n_sets: int,
        obs_dim: int,
        action_low: Sequence[float],
        action_high: Sequence[float],
        params: DeterministicSACParams,
        device: torch.device,
        seed: int,
    ) -> None:
        super().__init__(
            n_sets, obs_dim, action_low, action_high, params.hidden, params.exploration_noise, device, seed, params.normalize_obs,
            params.pixels,
        )
        self.params = params
        sizes = [obs_dim + self.action_dim, *params.hidden, 1]
        self.critics = nn.ModuleList(StackedMLP(n_sets, sizes) for _ in range(2)).to(device)
        self.value = StackedMLP(n_sets, [obs_dim, *params.hidden, 1]).to(device)
        self.value_target = copy.deepcopy(self.value).requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=params.lr, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=params.lr, fused=True)
        self.value_optimizer = torch.optim.Adam(self.value.parameters(), lr=params.lr, fused=True)

    @torch.inference_mode()
    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """``Q_1(s, a) - (reward_scale r + discount V'(s'))``."""
        t = self.tensors(batch)
        y = self.params.reward_scale * t["reward"] + t["discount"] * self.value_target(t["next_obs"]).squeeze(-1)
        return (self.critics[0](critic_input(t["obs"], t["action"])).squeeze(-1) - y).cpu().numpy()

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, float]]:
        """One step of the critics, the value network and the actor for every agent."""
        s = self.params
        t = self.tensors(batch)
        obs = t["obs"]
        # the critic step leaves the actor unchanged: its actions now serve V's target and the actor step
        action, w = self.policy_and_weights(obs, weights, with_grad=True)
        w_sum = w.sum(dim=1)
        with torch.no_grad():
            y = s.reward_scale * t["reward"] + t["discount"] * self.value_target(t["next_obs"]).squeeze(-1)
        x = critic_input(obs, t["action"])
        critic_loss = sum(weighted_mean((c(x).squeeze(-1) - y) ** 2, w, w_sum) for c in self.critics)
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.sum().backward()
        optimizer_step(self.critic_optimizer)

        x_pi = critic_input(obs, action)
        q_pi = [c(x_pi).squeeze(-1) for c in self.critics]
        with torch.no_grad():
            v_target = torch.minimum(q_pi[0], q_pi[1])
        value_loss = weighted_mean((self.value(obs).squeeze(-1) - v_target) ** 2, w, w_sum)
        self.value_optimizer.zero_grad(set_to_none=True)
        value_loss.sum().backward()
        optimizer_step(self.value_optimizer)

        actor_loss = -weighted_mean(q_pi[0], w, w_sum)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.sum().backward()  # reaches the critics too; their gradients are cleared before their next step
        optimizer_step(self.actor_optimizer)
        soft_update(self.value_target, self.value, s.tau)
        self.updates += 1
        return None, {
            "critic_loss": float(critic_loss.detach().mean()),
            "value_loss": float(value_loss.detach().mean()),
            "actor_loss": float(actor_loss.detach().mean()),
        }

    def _modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor, "critics": self.critics, "value": self.value, "value_target": self.value_target}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor_optimizer": self.actor_optimizer, "critic_optimizer": self.critic_optimizer, "value_optimizer": self.value_optimizer}


def make_sac(spec: GroupSpec, config: ActorCriticConfig, n_sets: int, device: torch.device, seed: int, **_: object) -> DeterministicSAC:
    c = config
    params = DeterministicSACParams(c.critic_lr, tuple(c.hidden), c.tau, c.exploration_noise, c.reward_scale, c.normalize_obs, spec.pixels)
    return DeterministicSAC(n_sets, flat_obs_dim(spec, c.hidden), spec.action_low, spec.action_high, params, device, seed)


