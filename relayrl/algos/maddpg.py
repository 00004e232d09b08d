"""MADDPG (Lowe et al. 2017) and MATD3 (Ackermann et al. 2019: MADDPG with TD3's twin
critics, target policy smoothing and delayed actor updates) on joint rows ``[B, N, ...]``.

Per agent i, with the targets' actions ``a'_j = mu'_j(o'_j)`` for every agent (smoothed with
clipped Gaussian noise in MATD3; a one-hot Gumbel sample for discrete actions):

    y_i = r_i + discount_i * min_c Q'_{i,c}(o', a'_1, ..., a'_N)
    critic loss_i = sum_c mean_b (Q_{i,c}(o, a_1, ..., a_N) - y_i)^2
    actor loss_i  = -mean_b Q_{i,1}(o, a_1, ..., mu_i(o_i), ..., a_N)   (+ logits_penalty * mean(logits^2), discrete)

the other agents' actions in the actor loss being the replayed ones (Lowe et al. 2017, eq.
5); the logits penalty keeps discrete logits from growing without bound (EPyMARL's and
HARL's discrete MADDPG). Targets follow by Polyak averaging with ``tau``.

With ``critic: common`` (HARL's MADDPG and MATD3, ``harl/runners/off_policy_ma_runner.py``):
one critic (twin pair) for the team learns the team's reward ``r = sum_i r_i``,
``y = r + discount * min_c Q'_c(o', a'_1, ..., a'_N)``, and agent i's actor loss is
``-mean_b Q_1(o, a_1, ..., mu_i(o_i), ..., a_N)`` through it, the others' actions still
the replayed ones.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from relayrl.algos.algorithm import Weights, base_algorithm
from relayrl.algos.joint_critics import JointCritics, masked_mean
from relayrl.core.specs import GroupSpec


@dataclass(frozen=True)
class MADDPGParams:
    actor_lr: float
    critic_lr: float
    hidden: tuple[int, ...]
    tau: float
    exploration_noise: float
    twin_critics: bool = False
    policy_noise: float = 0.0
    noise_clip: float = 0.0
    policy_delay: int = 1
    gumbel_temperature: float = 1.0
    logits_penalty: float = 1e-3
    max_grad_norm: float | None = 0.5
    critic: str = "joint"


class MADDPG(JointCritics):
    """MADDPG, or MATD3 with ``twin_critics``, smoothing noise and ``policy_delay``."""

    def __init__(self, spec: GroupSpec, n_sets: int, params: MADDPGParams, device: torch.device, seed: int) -> None:
        n_actions = spec.n_actions if spec.n_actions else int(np.prod(spec.action_shape))
        super().__init__(spec, n_sets, params.hidden, n_actions, 2 if params.twin_critics else 1, device, seed, critic=params.critic)
        self.params = params
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=params.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=params.critic_lr)

    def acting(self, out: torch.Tensor, explore: float) -> np.ndarray:
        """Box: ``mu(o)`` plus Gaussian noise of std ``exploration_noise`` x the half-range,
        clipped to the bounds; discrete: a sample of the softmax (the Gumbel-max of the
        logits), the most likely action when greedy."""
        if self.discrete:
            if explore <= 0:
                return out.argmax(-1).cpu().numpy()
            return self.sampled_choice(out)
        action = self.squash(out).cpu().numpy()
        if explore > 0:
            noise = self.rng.normal(0.0, self.params.exploration_noise, action.shape) * self._scale_np
            action = np.clip(action + noise, self._low_np, self._high_np)
        return action.astype(np.float32)

    def policy(self, actor: torch.nn.Module, obs: torch.Tensor, smooth: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Every agent's action for the critics ``[N, B, A]`` and the actor's raw output."""
        raw = self.sets_to_agents(actor(self.agents_to_sets(obs)), obs.shape[0])
        if self.discrete:
            return self.straight_through(raw, self.params.gumbel_temperature), raw
        action = self.squash(raw)
        if smooth and self.params.policy_noise > 0:
            noise = torch.randn(action.shape, generator=self.generator, device=self.device) * self.params.policy_noise
            action = action + noise.clamp(-self.params.noise_clip, self.params.noise_clip) * self.scale
            action = torch.maximum(torch.minimum(action, self.center + self.scale), self.center - self.scale)
        return action, raw

    def targets(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            next_action, _ = self.policy(self.actor_target, t["next_obs"], smooth=True)
            next_q = self.q(self.critics_target, self.critic_input(t["next_obs"], self.joint(next_action))).min(0).values
            if self.common_critic:
                reward, discount, _ = self.team(t)
                return reward + discount * next_q
            return t["reward"] + t["discount"] * next_q

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, Any]]:
        """One critic step of every agent, and every ``policy_delay`` updates an actor step
        and the targets' Polyak step."""
        s = self.params
        t = self.tensors(batch)
        metrics: dict[str, Any] = self.critic_step(t, self.critic_optimizer, s.max_grad_norm)
        self.updates += 1
        if self.updates % s.policy_delay == 0:
            own, raw = self.policy(self.actor, t["obs"], smooth=False)
            x = self.critic_input(t["obs"], self.own_actions(t["action"], own))  # [N, B, ...]: agent i's joint action in row i
            if self.common_critic:  # the team's critic reads every agent's joint action as rows of its one set
                q_own = self.q(self.critics[:1], x.reshape(1, -1, x.shape[-1]))[0].reshape(x.shape[:2])
            else:
                q_own = self.q(self.critics[:1], x)[0]
            actor_loss = -masked_mean(q_own, t["alive"])
            if self.discrete and s.logits_penalty > 0:
                actor_loss = actor_loss + s.logits_penalty * raw.pow(2).mean(dim=(1, 2))
            self.actor_step(actor_loss, self.actor_optimizer, s.max_grad_norm)
            self.follow(s.tau)
            metrics["actor_loss"] = float(actor_loss.detach().mean())
        return None, metrics

    def optimizer_map(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor_optimizer": self.actor_optimizer, "critic_optimizer": self.critic_optimizer}


def make_maddpg(spec: GroupSpec, config: Any, n_sets: int, device: torch.device, seed: int, **_: Any) -> MADDPG:
    """MADDPG, or MATD3 (``algo: matd3``: twin critics, smoothing, delayed actor)."""
    c = config
    matd3 = base_algorithm(c.algo) == "matd3"
    params = MADDPGParams(
        actor_lr=c.actor_lr,
        critic_lr=c.critic_lr,
        hidden=tuple(c.hidden),
        tau=c.tau,
        exploration_noise=c.exploration_noise,
        twin_critics=matd3,
        policy_noise=c.policy_noise if matd3 else 0.0,
        noise_clip=c.noise_clip if matd3 else 0.0,
        policy_delay=c.policy_delay if matd3 else 1,
        gumbel_temperature=c.gumbel_temperature,
        logits_penalty=c.logits_penalty,
        max_grad_norm=c.max_grad_norm,
        critic=c.critic,
    )
    return MADDPG(spec, n_sets, params, device, seed)
