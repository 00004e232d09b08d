"""TD3 (Fujimoto et al. 2018), and DDPG as its special case, for P agents in batched calls,
with weighted losses for DASE.

Each of the P parameter sets is an independent agent (actor, twin critics, their targets,
Adam moments); all P are computed in one forward and backward pass over stacked
parameters. Per agent, with per-transition weights w (1 everywhere, or DPS weights on
other agents' transitions; paper 001, SPEC §1.2):

    y = r + discount * min_j Q'_j(s', clip(pi'(s') + clip(N(0, 0.2), -0.5, 0.5)))
    critic loss = sum_j sum_b w_b (Q_j(s_b, a_b) - y_b)^2 / sum_b w_b
    actor loss  = -sum_b w_b Q_1(s_b, pi(s_b)) / sum_b w_b      (every ``policy_delay`` updates)

Hyperparameters (paper 001, Tables 1-2; SPEC §1.2): Adam 3e-4 for actor and critics,
256-256 ReLU MLPs, tau 0.005, policy noise 0.2 and noise clip 0.5 (in units of the
action range's half-width, as the original code scales them by max_action), policy
delay 2, exploration noise 0.1, gamma 0.99 (applied through the stored ``discount``).
``TD3Settings.ddpg()`` is DDPG in the same form (Fujimoto et al.'s DDPG baseline, which
paper 001 uses): one critic, no target smoothing, actor and targets updated every step.
"""

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from relayrl.nets.stacked import StackedLinear


@dataclass(frozen=True)
class TD3Settings:
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    hidden: tuple[int, ...] = (256, 256)
    tau: float = 0.005
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_delay: int = 2
    exploration_noise: float = 0.1
    twin_critics: bool = True

    @classmethod
    def ddpg(cls, **overrides: object) -> "TD3Settings":
        return cls(**{"policy_noise": 0.0, "noise_clip": 0.0, "policy_delay": 1, "twin_critics": False, **overrides})


class StackedMLP(nn.Module):
    """P independent MLPs ``[P, B, in] -> [P, B, out]`` with ReLU between layers."""

    def __init__(self, n_sets: int, sizes: Sequence[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(StackedLinear(n_sets, a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def _soft_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for t, o in zip(target.parameters(), online.parameters()):
            t.lerp_(o, tau)


class TD3Learner:
    """P TD3 agents with stacked parameters. Arrays in and out are ``[P, B, ...]``."""

    def __init__(
        self,
        n_sets: int,
        obs_dim: int,
        action_low: Sequence[float],
        action_high: Sequence[float],
        settings: TD3Settings,
        device: torch.device,
        seed: int,
    ) -> None:
        self.n_sets = n_sets
        self.settings = settings
        self.device = device
        low = torch.as_tensor(action_low, dtype=torch.float32, device=device)
        high = torch.as_tensor(action_high, dtype=torch.float32, device=device)
        self.center, self.scale = (high + low) / 2, (high - low) / 2
        self._low_np, self._high_np, self._scale_np = (x.cpu().numpy() for x in (low, high, self.scale))
        self.action_dim = len(action_low)
        torch.manual_seed(seed)
        hidden = list(settings.hidden)
        self.actor = StackedMLP(n_sets, [obs_dim, *hidden, self.action_dim]).to(device)
        n_critics = 2 if settings.twin_critics else 1
        self.critics = nn.ModuleList(StackedMLP(n_sets, [obs_dim + self.action_dim, *hidden, 1]) for _ in range(n_critics)).to(device)
        self.actor_target, self.critics_target = copy.deepcopy(self.actor), copy.deepcopy(self.critics)
        self.actor_target.requires_grad_(False)
        self.critics_target.requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=settings.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=settings.critic_lr)
        self.updates = 0
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.rng = np.random.default_rng(seed)

    def policy(self, obs: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Deterministic actions ``[P, B, act]`` within the action bounds."""
        actor = self.actor_target if target else self.actor
        return self.center + self.scale * torch.tanh(actor(obs))

    def _q(self, critics: nn.ModuleList, obs: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        x = torch.cat([obs, action], dim=-1)
        return [c(x).squeeze(-1) for c in critics]

    @torch.inference_mode()
    def act(self, obs: np.ndarray, explore: bool) -> np.ndarray:
        """Actions ``[P, M, act]``; with ``explore``, Gaussian noise of std 0.1 x the half-range, clipped to the bounds."""
        action = self.policy(torch.as_tensor(obs, dtype=torch.float32, device=self.device)).cpu().numpy()
        if explore:
            noise = self.rng.normal(0.0, self.settings.exploration_noise, action.shape) * self._scale_np
            action = np.clip(action + noise, self._low_np, self._high_np)
        return action.astype(np.float32)

    def update(self, batch: dict[str, np.ndarray], weights: np.ndarray | None = None) -> dict[str, float]:
        """One critic step for every agent (and an actor step and target update every
        ``policy_delay`` calls). ``weights [P, B]`` default to 1 (plain TD3)."""
        s = self.settings
        t = {k: torch.as_tensor(batch[k], device=self.device) for k in ("obs", "action", "reward", "next_obs", "discount")}
        obs, action, next_obs = t["obs"].float(), t["action"].float(), t["next_obs"].float()
        w = torch.ones(obs.shape[:2], device=self.device) if weights is None else torch.as_tensor(weights, device=self.device).float()
        w_sum = w.sum(dim=1)
        with torch.no_grad():
            noise = torch.randn(action.shape, generator=self.generator, device=self.device) * s.policy_noise
            noise = noise.clamp(-s.noise_clip, s.noise_clip) * self.scale
            next_action = torch.maximum(torch.minimum(self.policy(next_obs, target=True) + noise, self.center + self.scale), self.center - self.scale)
            next_q = torch.stack(self._q(self.critics_target, next_obs, next_action)).min(dim=0).values
            y = t["reward"].float() + t["discount"].float() * next_q
        critic_loss = sum((w * (q - y) ** 2).sum(1) for q in self._q(self.critics, obs, action)) / w_sum  # [P]
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.sum().backward()  # agents share no parameters: each gets its own gradient
        self.critic_optimizer.step()
        self.updates += 1
        metrics = {"critic_loss": float(critic_loss.detach().mean())}
        if self.updates % s.policy_delay == 0:
            q_pi = self._q(self.critics[:1], obs, self.policy(obs))[0]
            actor_loss = -(w * q_pi).sum(1) / w_sum
            self.actor_optimizer.zero_grad(set_to_none=True)
            actor_loss.sum().backward()
            self.actor_optimizer.step()
            _soft_update(self.actor_target, self.actor, s.tau)
            _soft_update(self.critics_target, self.critics, s.tau)
            metrics["actor_loss"] = float(actor_loss.detach().mean())
        return metrics

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critics": self.critics.state_dict(),
            "actor_target": self.actor_target.state_dict(),
            "critics_target": self.critics_target.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "updates": self.updates,
            "generator": self.generator.get_state(),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critics.load_state_dict(state["critics"])
        self.actor_target.load_state_dict(state["actor_target"])
        self.critics_target.load_state_dict(state["critics_target"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.updates = state["updates"]
        self.generator.set_state(state["generator"])
        self.rng.bit_generator.state = state["rng"]
