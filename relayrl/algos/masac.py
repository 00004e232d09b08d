"""MASAC: soft actor-critic (Haarnoja et al. 2018, with the automatic temperature of
Haarnoja et al. 2018b) with MADDPG's centralised critics (Lowe et al. 2017), the learner of
the AI Arena's cooperative navigation (paper 004, section 4.2), on joint rows ``[B, N, ...]``.

Per agent i, with every agent's next action sampled from its current policy,
``a'_j ~ pi_j(.|o'_j)``:

    y_i = r_i + discount_i * (min_c Q'_{i,c}(o', a'_1, ..., a'_N) - alpha_i log pi_i(a'_i|o'_i))
    critic loss_i = sum_c mean_b (Q_{i,c}(o, a_1, ..., a_N) - y_i)^2
    actor loss_i  = mean_b (alpha_i log pi_i(a~_i|o_i) - min_c Q_{i,c}(o, a_1, ..., a~_i, ..., a_N)),  a~_i ~ pi_i(.|o_i)
    temperature loss_i = -mean_b log alpha_i (log pi_i(a~_i|o_i) + H_target)

the other agents' actions in the actor loss being the replayed ones, as MADDPG's. With a
common critic (``critic: common``, the AI Arena's code, ``arena5/algos/masac/masac.py``) one
twin pair learns the team's reward r = sum_i r_i for all agents, every agent's action in
the actor step is its current policy's, and the losses are summed over the agents as that
code sums them:

    y = r + discount * (min_c Q'_c(o', a'_1, ..., a'_N) - sum_i alpha_i log pi_i(a'_i|o'_i))
    actor loss = sum_i mean_b (alpha_i log pi_i(a~_i|o_i) - min_c Q_c(o, a~_1, ..., a~_N))

so that agent i's actor follows N dQ/da~_i with the others acting as they now would.
Box actions: a tanh-squashed Gaussian with a state-dependent std (log std clamped to
[-20, 2]), H_target = -dim(A) (Haarnoja et al. 2018b); discrete actions: a one-hot Gumbel
sample (straight-through), H_target = target_entropy_scale x log |A| (Christodoulou 2019
uses 0.98). Critic targets follow by Polyak averaging; there is no target actor.
"""

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from relayrl.algos.algorithm import Weights
from relayrl.algos.joint_critics import JointCritics, masked_mean
from relayrl.core.specs import GroupSpec
from relayrl.nets.subnormals import optimizer_step

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


@dataclass(frozen=True)
class MASACParams:
    actor_lr: float
    critic_lr: float
    alpha_lr: float
    hidden: tuple[int, ...]
    tau: float
    initial_alpha: float = 0.2
    auto_alpha: bool = True
    target_entropy_scale: float = 0.98
    max_grad_norm: float | None = 10.0
    critic: str = "joint"


class MASAC(JointCritics):
    """N agents' stochastic actors, twin centralised critics per agent and a temperature per agent."""

    checked_metrics = ("actor_loss", "alpha")
    metric_columns = ("actor_loss", "alpha", "entropy")

    def __init__(self, spec: GroupSpec, n_sets: int, params: MASACParams, device: torch.device, seed: int) -> None:
        n_actions = spec.n_actions if spec.n_actions else int(np.prod(spec.action_shape))
        out = n_actions if spec.n_actions else 2 * n_actions
        super().__init__(spec, n_sets, params.hidden, out, 2, device, seed, actor_target=False, critic=params.critic)
        self.params = params
        self.log_alpha = torch.full((self.n_agents,), math.log(params.initial_alpha), device=device, requires_grad=True)
        self.target_entropy = params.target_entropy_scale * math.log(n_actions) if self.discrete else -float(n_actions)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=params.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=params.critic_lr)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=params.alpha_lr)

    def sample(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action ``[..., A]`` and its log-probability ``[...]``."""
        if self.discrete:
            one_hot = self.straight_through(raw, 1.0)
            return one_hot, (one_hot * F.log_softmax(raw, dim=-1)).sum(-1)
        mean, log_std = raw.chunk(2, dim=-1)
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        u = mean + std * torch.randn(mean.shape, generator=self.generator, device=self.device)
        squashed = torch.tanh(u)
        # change of variables through tanh and the bounds' affine map (Haarnoja et al. 2018, appendix C)
        log_prob = torch.distributions.Normal(mean, std).log_prob(u) - torch.log(self.scale * (1 - squashed.pow(2)) + 1e-6)
        return self.center + self.scale * squashed, log_prob.sum(-1)

    def acting(self, out: torch.Tensor, explore: float) -> np.ndarray:
        """A sample of the policy, or its most likely action (the mean's squash) when greedy."""
        if self.discrete:
            if explore <= 0:
                return out.argmax(-1).cpu().numpy()
            return self.sampled_choice(out)
        mean, log_std = (part.cpu().numpy() for part in out.chunk(2, dim=-1))
        if explore > 0:
            mean = mean + np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)) * self.rng.standard_normal(mean.shape)
        return (self._low_np + self._scale_np * (np.tanh(mean) + 1)).astype(np.float32)

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every agent's sampled action ``[N, B, A]`` and log-probability ``[N, B]``."""
        return self.sample(self.sets_to_agents(self.actor(self.agents_to_sets(obs)), obs.shape[0]))

    def targets(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            next_action, next_log_prob = self.policy(t["next_obs"])
            next_q = self.q(self.critics_target, self.critic_input(t["next_obs"], self.joint(next_action))).min(0).values
            entropy_term = self.log_alpha.exp()[:, None] * next_log_prob  # [N, B]
            if self.common_critic:
                reward, discount, _ = self.team(t)
                return reward + discount * (next_q - (entropy_term * t["alive"]).sum(0, keepdim=True))
            return t["reward"] + t["discount"] * (next_q - entropy_term)

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, Any]]:
        """One step of every agent's critics, actor and temperature, then the critics' Polyak step."""
        s = self.params
        t = self.tensors(batch)
        metrics = self.critic_step(t, self.critic_optimizer, s.max_grad_norm)
        own, log_prob = self.policy(t["obs"])
        actions = self.joint(own) if self.common_critic else self.own_actions(t["action"], own)
        q_own = self.q(self.critics, self.critic_input(t["obs"], actions)).min(0).values  # [C, B]: a common one for every agent
        alpha = self.log_alpha.exp().detach()
        actor_loss = masked_mean(alpha[:, None] * log_prob - q_own, t["alive"])
        self.actor_step(actor_loss, self.actor_optimizer, s.max_grad_norm)
        if s.auto_alpha:
            alpha_loss = -masked_mean(self.log_alpha[:, None] * (log_prob.detach() + self.target_entropy), t["alive"])
            self.alpha_optimizer.zero_grad(set_to_none=True)
            alpha_loss.sum().backward()
            optimizer_step(self.alpha_optimizer)
        self.follow(s.tau)
        self.updates += 1
        return None, {
            **metrics,
            "actor_loss": float(actor_loss.detach().mean()),
            "alpha": float(self.log_alpha.detach().exp().mean()),
            "entropy": float(-masked_mean(log_prob.detach(), t["alive"]).mean()),
        }

    def optimizer_map(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor_optimizer": self.actor_optimizer, "critic_optimizer": self.critic_optimizer, "alpha_optimizer": self.alpha_optimizer}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "log_alpha": self.log_alpha.detach().clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])


def make_masac(spec: GroupSpec, config: Any, n_sets: int, device: torch.device, seed: int, **_: Any) -> MASAC:
    c = config
    params = MASACParams(
        actor_lr=c.actor_lr,
        critic_lr=c.critic_lr,
        alpha_lr=c.alpha_lr,
        hidden=tuple(c.hidden),
        tau=c.tau,
        initial_alpha=c.initial_alpha,
        auto_alpha=c.auto_alpha,
        target_entropy_scale=c.target_entropy_scale,
        max_grad_norm=c.max_grad_norm,
        critic=c.critic,
    )
    return MASAC(spec, n_sets, params, device, seed)
