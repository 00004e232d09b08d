"""What the deterministic actor-critic learners share (TD3, DDPG, deterministic SAC):
P agents' stacked MLPs, a tanh-squashed deterministic actor within the action bounds,
Gaussian exploration noise, soft target updates and weighted squared errors.

Every learner here takes per-transition weights ``w [P, B]`` (1 everywhere, or DPS weights
on other agents' transitions; paper 001, SPEC §1.2) and normalises each weighted loss by
``sum_b w_b``, so all-ones weights give the unweighted loss.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from relayrl.algos.algorithm import Weights, wrong_actions
from relayrl.algos.obs_normalizer import ObsNormalizer
from relayrl.core.specs import GroupSpec
from relayrl.nets.observations import network_input, network_input_array, warn_of_flat_screens
from relayrl.nets.stacked import StackedLinear
from relayrl.replay import FieldSpec


def continuous_fields(spec: GroupSpec) -> dict[str, FieldSpec]:
    """Observations and actions as float32 (the networks' input and output)."""
    if not spec.continuous:
        raise wrong_actions(spec, "the actor_critic learners")
    return {"obs": FieldSpec(spec.obs_shape, np.float32), "action": FieldSpec(spec.action_shape, np.float32)}


def flat_obs_dim(spec: GroupSpec, hidden: Sequence[int]) -> int:
    """The width of the flat observations the actor and critics read; warns where they are
    large screens (these learners have no convolutional torso)."""
    obs_dim = int(np.prod(spec.obs_shape))
    warn_of_flat_screens(spec, "the actor's first layer", obs_dim * hidden[0], "these learners have no convolutional torso: shrink the "
                         "screens in the env's settings, or train ppo, mappo or seac with on_policy.torso=nature_cnn")
    return obs_dim


class StackedMLP(nn.Module):
    """P independent MLPs ``[P, B, in] -> [P, B, out]`` with ReLU between layers."""

    def __init__(self, n_sets: int, sizes: Sequence[int]) -> None:
        super().__init__()
        last = len(sizes) - 2
        self.layers = nn.ModuleList(StackedLinear(n_sets, a, b, inner=i < last) for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def soft_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    """target <- (1 - tau) target + tau online (Lillicrap et al. 2016)."""
    with torch.no_grad():
        torch._foreach_lerp_(list(target.parameters()), list(online.parameters()), tau)


def weighted_mean(values: torch.Tensor, w: torch.Tensor, w_sum: torch.Tensor) -> torch.Tensor:
    """``sum_b w_b v_b / sum_b w_b`` per agent: ``[P, B] -> [P]``."""
    return (w * values).sum(1) / w_sum


def critic_input(obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    return torch.cat([obs, action], dim=-1)


class DeterministicActor:
    """Base of P agents with a deterministic actor ``pi(s) = center + scale * tanh(f(s))``.

    Subclasses build their critics and implement ``update`` and ``td_error``; ``_modules``
    and ``_optimizers`` name what a checkpoint holds. With ``normalize_obs`` every network
    sees observations normalised by the agent's running statistics (``observe`` feeds
    them). Observations of any shape are flattened.
    """

    loss_metric = "critic_loss"
    exploration_name = None  # Gaussian noise of a fixed std: nothing to report
    checked_metrics: tuple[str, ...] = ("actor_loss", "value_loss")
    metric_columns = ("actor_loss",)

    def __init__(
        self,
        n_sets: int,
        obs_dim: int,
        action_low: Sequence[float],
        action_high: Sequence[float],
        hidden: Sequence[int],
        exploration_noise: float,
        device: torch.device,
        seed: int,
        normalize_obs: bool = False,
        pixels: bool = False,
    ) -> None:
        self.n_sets = n_sets
        self.pixels = pixels
        self.obs_dim = obs_dim
        self.device = device
        self.exploration_noise = exploration_noise
        low = torch.as_tensor(action_low, dtype=torch.float32, device=device)
        high = torch.as_tensor(action_high, dtype=torch.float32, device=device)
        self.center, self.scale = (high + low) / 2, (high - low) / 2
        self._low_np, self._high_np, self._scale_np = (x.cpu().numpy() for x in (low, high, self.scale))
        self.action_dim = len(action_low)
        torch.manual_seed(seed)
        self.actor = StackedMLP(n_sets, [obs_dim, *hidden, self.action_dim]).to(device)
        self.updates = 0
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.obs_normalizer = ObsNormalizer(n_sets, obs_dim, device) if normalize_obs else None

    def observe(self, obs: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Each agent's newly collected observations ``[P, N, ...]`` (rows where ``mask``
        ``[P, N]`` holds), for the running normalisation; a no-op without it."""
        if self.obs_normalizer is not None:
            self.obs_normalizer.update(network_input_array(obs.reshape(*obs.shape[:2], -1), self.pixels), mask)

    def normalized(self, obs: torch.Tensor) -> torch.Tensor:
        """What the networks read: 8-bit intensities scaled (``relayrl.nets.observations``),
        then normalised where the learner normalises."""
        obs = network_input(obs, self.pixels)
        return obs if self.obs_normalizer is None else self.obs_normalizer(obs)

    def squash(self, raw: torch.Tensor) -> torch.Tensor:
        return self.center + self.scale * torch.tanh(raw)

    def policy(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic actions ``[P, B, act]`` within the action bounds."""
        return self.squash(self.actor(obs))

    def clip_actions(self, action: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(action, self.center + self.scale), self.center - self.scale)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, carry: None, explore: float, mask: np.ndarray | None = None) -> tuple[np.ndarray, None]:
        """Actions ``[P, M, act]`` (Box actions: no masks); with ``explore > 0``, Gaussian noise of std
        ``exploration_noise`` x the half-range, clipped to the bounds (paper 001, Table 2)."""
        flat = torch.as_tensor(obs.reshape(*obs.shape[:2], -1), dtype=torch.float32, device=self.device)
        action = self.policy(self.normalized(flat)).cpu().numpy()
        if explore > 0:
            noise = self.rng.normal(0.0, self.exploration_noise, action.shape) * self._scale_np
            action = np.clip(action + noise, self._low_np, self._high_np)
        return action.astype(np.float32), None

    def exploration(self, env_steps: int) -> float:
        """The Gaussian noise is on throughout training."""
        return 1.0

    def sync_target(self) -> None:
        """Targets follow by soft updates inside ``update``."""

    def random_actions(self, shape: tuple[int, ...], mask: np.ndarray | None = None) -> np.ndarray:
        """Uniform actions ``[*shape, act]`` within the bounds (the random start steps)."""
        return self.rng.uniform(self._low_np, self._high_np, (*shape, self.action_dim)).astype(np.float32)

    def tensors(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """The batch as tensors, states normalised when the learner normalises them."""
        t = {k: torch.as_tensor(batch[k], device=self.device).float() for k in ("obs", "action", "reward", "next_obs", "discount")}
        for key in ("obs", "next_obs"):
            t[key] = self.normalized(t[key].reshape(*t[key].shape[:2], -1))
        return t

    def policy_and_weights(self, obs: torch.Tensor, weights: Weights, with_grad: bool) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The actor's actions on ``obs`` (when the update needs them: ``with_grad`` for an
        actor step, or for ``weights`` given as a function of them) and the weights."""
        policy = None
        if with_grad or callable(weights):
            with torch.set_grad_enabled(with_grad):
                policy = self.policy(obs)
        if weights is None:
            w = torch.ones(obs.shape[:2], device=self.device)
        elif callable(weights):
            w = weights(policy.detach())
        else:
            w = torch.as_tensor(weights, device=self.device).float()
        return policy, w

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, float]]:
        """One gradient step of every agent; ``weights [P, B]`` default to 1. Uniform replay
        only: no priorities come back."""
        raise NotImplementedError

    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """``Q_1(s, a) - y`` per transition ``[P, B]`` with the current networks."""
        raise NotImplementedError

    def _modules(self) -> dict[str, nn.Module]:
        raise NotImplementedError

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        raise NotImplementedError

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return list(self._optimizers().values())

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {name: m.state_dict() for name, m in {**self._modules(), **self._optimizers()}.items()}
        state.update(updates=self.updates, generator=self.generator.get_state(), rng=self.rng.bit_generator.state)
        if self.obs_normalizer is not None:
            state["obs_normalizer"] = self.obs_normalizer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, m in {**self._modules(), **self._optimizers()}.items():
            m.load_state_dict(state[name])
        self.updates = state["updates"]
        self.generator.set_state(state["generator"])
        self.rng.bit_generator.state = state["rng"]
        self._load_normalizer(state)

    def _load_normalizer(self, state: dict[str, Any]) -> None:
        if (self.obs_normalizer is None) != ("obs_normalizer" not in state):
            raise ValueError("the checkpoint and the learner disagree on normalize_obs; load it with the run's own config")
        if self.obs_normalizer is not None:
            self.obs_normalizer.load_state_dict(state["obs_normalizer"])

    def policy_state(self) -> dict[str, Any]:
        """What acting needs: the actor and, when used, the observation statistics."""
        state: dict[str, Any] = {"actor": self.actor.state_dict()}
        if self.obs_normalizer is not None:
            state["obs_normalizer"] = self.obs_normalizer.state_dict()
        return state

    def load_policy_state(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self._load_normalizer(state)
