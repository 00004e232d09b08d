"""TD3 (Fujimoto et al. 2018), and DDPG as its special case, for P agents in batched calls,
with weighted losses for DASE.

Each of the P parameter sets is an independent agent (actor, critics, their targets,
Adam moments); all P are computed in one forward and backward pass over stacked
parameters. Per agent, with per-transition weights w (paper 001, SPEC §1.2):

    y = reward_scale * r + discount * min_j Q'_j(s', clip(pi'(s') + clip(N(0, 0.2), -0.5, 0.5)))
    critic loss = sum_j sum_b w_b (Q_j(s_b, a_b) - y_b)^2 / sum_b w_b
    actor loss  = -sum_b w_b Q_1(s_b, pi(s_b)) / sum_b w_b      (every ``policy_delay`` updates)

TD3 hyperparameters (paper 001, Table 2): Adam 3e-4 for actor and critics, 256-256 ReLU
MLPs, tau 0.005, policy noise 0.2 and noise clip 0.5 (in units of the action range's
half-width, as the original code scales them by max_action), policy delay 2, exploration
noise 0.1, gamma 0.99 (applied through the stored ``discount``).
DDPG is the same learner with one critic, no target smoothing and the actor and targets
updated every step (paper 001, Table 2's DDPG column: Lillicrap et al. 2016 with batch 256
and Gaussian exploration; its other settings, actor 1e-4 / critic 1e-3 with L2 weight
decay 1e-2 on the critic, tau 1e-3, 400-300 units and normalised observations, are the
``ddpg`` presets').
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
from relayrl.algos.algorithm import Weights, base_algorithm
from relayrl.core.specs import GroupSpec
from relayrl.nets.subnormals import optimizer_step


@dataclass(frozen=True)
class TD3Params:
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    critic_weight_decay: float = 0.0
    hidden: tuple[int, ...] = (256, 256)
    tau: float = 0.005
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_delay: int = 2
    exploration_noise: float = 0.1
    twin_critics: bool = True
    reward_scale: float = 1.0
    normalize_obs: bool = False
    pixels: bool = False  # the env's observations are 8-bit intensities (GroupSpec.pixels)


class TD3(DeterministicActor):
    """P TD3 (or DDPG) agents with stacked parameters. Arrays in and out are ``[P, B, ...]``."""

    def __init__(
        self,
        n_sets: int,
        obs_dim: int,
        action_low: Sequence[float],
        action_high: Sequence[float],
        params: TD3Params,
        device: torch.device,
        seed: int,
    ) -> None:
        super().__init__(
            n_sets, obs_dim, action_low, action_high, params.hidden, params.exploration_noise, device, seed, params.normalize_obs,
            params.pixels,
        )
        self.params = params
        n_critics = 2 if params.twin_critics else 1
        sizes = [obs_dim + self.action_dim, *params.hidden, 1]
        self.critics = nn.ModuleList(StackedMLP(n_sets, sizes) for _ in range(n_critics)).to(device)
        self.actor_target, self.critics_target = copy.deepcopy(self.actor), copy.deepcopy(self.critics)
        self.actor_target.requires_grad_(False)
        self.critics_target.requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=params.actor_lr, fused=True)
        self.critic_optimizer = torch.optim.Adam(
            self.critics.parameters(), lr=params.critic_lr, weight_decay=params.critic_weight_decay, fused=True
        )

    def _q(self, critics: nn.ModuleList, obs: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        x = critic_input(obs, action)
        return [c(x).squeeze(-1) for c in critics]

    @torch.inference_mode()
    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """``Q_1(s, a) - y`` with the noiseless target action (no smoothing draw, so scoring
        transitions leaves the update's random stream untouched)."""
        s = self.params
        t = self.tensors(batch)
        next_action = self.squash(self.actor_target(t["next_obs"]))
        next_q = torch.stack(self._q(self.critics_target, t["next_obs"], next_action)).min(dim=0).values
        y = s.reward_scale * t["reward"] + t["discount"] * next_q
        return (self._q(self.critics[:1], t["obs"], t["action"])[0] - y).cpu().numpy()

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, float]]:
        """One critic step for every agent (and an actor step and target update every
        ``policy_delay`` calls). ``weights [P, B]`` default to 1 (plain TD3)."""
        s = self.params
        t = self.tensors(batch)
        actor_step = (self.updates + 1) % s.policy_delay == 0
        # the critic step leaves the actor unchanged: its actions now are the actor step's
        pi, w = self.policy_and_weights(t["obs"], weights, with_grad=actor_step)
        w_sum = w.sum(dim=1)
        with torch.no_grad():
            noise = torch.randn(t["action"].shape, generator=self.generator, device=self.device) * s.policy_noise
            noise = noise.clamp(-s.noise_clip, s.noise_clip) * self.scale
            next_action = self.clip_actions(self.squash(self.actor_target(t["next_obs"])) + noise)
            next_q = torch.stack(self._q(self.critics_target, t["next_obs"], next_action)).min(dim=0).values
            y = s.reward_scale * t["reward"] + t["discount"] * next_q
        critic_loss = sum(weighted_mean((q - y) ** 2, w, w_sum) for q in self._q(self.critics, t["obs"], t["action"]))
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.sum().backward()  # agents share no parameters: each gets its own gradient
        optimizer_step(self.critic_optimizer)
        self.updates += 1
        metrics = {"critic_loss": float(critic_loss.detach().mean())}
        if actor_step:
            self.critics.requires_grad_(False)  # the actor step needs no critic weight gradients
            q_pi = self._q(self.critics[:1], t["obs"], pi)[0]
            actor_loss = -weighted_mean(q_pi, w, w_sum)
            self.actor_optimizer.zero_grad(set_to_none=True)
            actor_loss.sum().backward()
            self.critics.requires_grad_(True)
            optimizer_step(self.actor_optimizer)
            soft_update(self.actor_target, self.actor, s.tau)
            soft_update(self.critics_target, self.critics, s.tau)
            metrics["actor_loss"] = float(actor_loss.detach().mean())
        return None, metrics

    def _modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor, "critics": self.critics, "actor_target": self.actor_target, "critics_target": self.critics_target}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor_optimizer": self.actor_optimizer, "critic_optimizer": self.critic_optimizer}


def make_td3(spec: GroupSpec, config: ActorCriticConfig, n_sets: int, device: torch.device, seed: int, **_: object) -> TD3:
    """TD3, or DDPG: one critic, no target smoothing, actor and targets every step."""
    c = config
    td3 = base_algorithm(c.algo) == "td3"
    params = TD3Params(
        actor_lr=c.actor_lr,
        critic_lr=c.critic_lr,
        critic_weight_decay=c.critic_weight_decay,
        hidden=tuple(c.hidden),
        tau=c.tau,
        policy_noise=c.policy_noise if td3 else 0.0,
        noise_clip=c.noise_clip if td3 else 0.0,
        policy_delay=c.policy_delay if td3 else 1,
        exploration_noise=c.exploration_noise,
        twin_critics=td3,
        reward_scale=c.reward_scale,
        normalize_obs=c.normalize_obs,
        pixels=spec.pixels,
    )
    return TD3(n_sets, flat_obs_dim(spec, c.hidden), spec.action_low, spec.action_high, params, device, seed)


