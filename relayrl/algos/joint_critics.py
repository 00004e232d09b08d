"""What the centralised-critic algorithms share (MADDPG, MATD3, MASAC): per-agent actors on
the agent's own observation, and per-agent critics on every agent's observation and action
(Lowe et al. 2017, section 4.1), all stacked so that the N agents cost one batched call.

Batches are joint rows ``[1, B, N, ...]`` (``relayrl.algos.centralised``). Agent i's critic
reads ``x = (o_1, ..., o_N, a_1, ..., a_N)`` in agent order, observations flattened and
discrete actions one-hot; its actor step replaces ``a_i`` by its actor's action and keeps
the other agents' replayed actions (Lowe et al. 2017, eq. 5). Actors share one parameter
set with ``param_sharing`` (acting rows of every agent). ``critic`` says what the critics
are: ``joint``, one per agent on every agent's observation and action (above); ``own``, one
per agent on its own observation and action only (the same code then trains independent
agents: the AI Arena's SAC per entity, paper 004 Fig. 11); ``common``, one for the team on
every observation and action, learning the team's reward (HARL's MADDPG and MATD3; the AI
Arena's MASAC).

Actions: Box actions are ``center + scale * tanh(f(o))`` within the bounds; discrete ones
go through the straight-through Gumbel-softmax (Jang et al. 2017): a one-hot sample
forward, the relaxed sample's gradient backward, as EPyMARL's and HARL's discrete MADDPG.
"""

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from relayrl.algos.actor_critic import StackedMLP
from relayrl.algos.algorithm import Weights, allowed_choice
from relayrl.core.specs import GroupSpec
from relayrl.nets.observations import network_input, warn_of_flat_screens
from relayrl.nets.stacked import clip_grad_norm_per_set
from relayrl.nets.subnormals import optimizer_step
from relayrl.replay import FieldSpec


def joint_fields(spec: GroupSpec) -> dict[str, FieldSpec]:
    """One agent's observation and action as stored (the joint rows put N of them side by side)."""
    action = FieldSpec((), np.int64) if spec.n_actions else FieldSpec(spec.action_shape, np.float32)
    return {"obs": FieldSpec(spec.obs_shape, spec.obs_dtype), "action": action}


class JointCritics:
    """N agents' actors (``n_sets`` parameter sets) and ``n_critics`` critics per agent, with
    targets. Subclasses give the actor's output size and the update."""

    loss_metric = "critic_loss"
    exploration_name = None
    checked_metrics: tuple[str, ...] = ("actor_loss",)
    metric_columns: tuple[str, ...] = ("actor_loss",)

    def __init__(
        self,
        spec: GroupSpec,
        n_sets: int,
        hidden: Sequence[int],
        actor_out: int,
        n_critics: int,
        device: torch.device,
        seed: int,
        actor_target: bool = True,
        critic: str = "joint",
    ) -> None:
        self.n_sets = n_sets
        self.n_agents = n = spec.n_agents
        self.device = device
        self.discrete = not spec.continuous
        self.pixels = spec.pixels  # the networks read 8-bit intensities divided by 255
        self.obs_dim = int(np.prod(spec.obs_shape))
        self.action_dim = spec.n_actions if self.discrete else int(np.prod(spec.action_shape))
        if not self.discrete:
            low = torch.as_tensor(spec.action_low, dtype=torch.float32, device=device)
            high = torch.as_tensor(spec.action_high, dtype=torch.float32, device=device)
            self.center, self.scale = (high + low) / 2, (high - low) / 2
            self._low_np, self._high_np = np.asarray(spec.action_low, np.float32), np.asarray(spec.action_high, np.float32)
            self._scale_np = (self._high_np - self._low_np) / 2
        torch.manual_seed(seed)
        self.actor = StackedMLP(n_sets, [self.obs_dim, *hidden, actor_out]).to(device)
        self.joint_critic = critic != "own"  # the critics read every agent's observation and action
        self.common_critic = critic == "common"
        self.critic_sets = 1 if self.common_critic else n  # one critic (of each twin) per agent, or one for the team
        inputs = (n if self.joint_critic else 1) * (self.obs_dim + self.action_dim)
        warn_of_flat_screens(spec, "each critic's first layer", inputs * hidden[0], "these learners have no convolutional torso: shrink the "
                             "screens in the env's settings, or train ppo, mappo or seac with on_policy.torso=nature_cnn")
        self.critics = nn.ModuleList(StackedMLP(self.critic_sets, [inputs, *hidden, 1]) for _ in range(n_critics)).to(device)
        self.critics_target = copy.deepcopy(self.critics).requires_grad_(False)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False) if actor_target else None
        # the parameter lists every update walks, made once (loading a state copies into these tensors)
        self.actor_params, self.critic_params = list(self.actor.parameters()), list(self.critics.parameters())
        self.critic_target_params = list(self.critics_target.parameters())
        self.actor_target_params = list(self.actor_target.parameters()) if actor_target else []
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.updates = 0

    # ----------------------------------------------------------------- layout
    def agents_to_sets(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, N, ...]`` -> the actor's rows ``[P, B * N / P, ...]``, agent by agent."""
        agents_first = x.transpose(0, 1)
        return agents_first.reshape(1, -1, *x.shape[2:]) if self.n_sets == 1 else agents_first

    def sets_to_agents(self, y: torch.Tensor, batch: int) -> torch.Tensor:
        """The actor's rows back to ``[N, B, ...]``."""
        return y.reshape(self.n_agents, batch, *y.shape[2:]) if self.n_sets == 1 else y

    def critic_input(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``obs [B, N, D]`` and each critic's joint action ``[C, B, N, A]`` -> ``[C, B, N (D + A)]``
        (C: ``critic_sets``); for ``own`` critics, critic i's own observation and action ``[N, B, D + A]``."""
        b, c = obs.shape[0], actions.shape[0]
        if not self.joint_critic:
            return torch.cat([obs.transpose(0, 1), torch.diagonal(actions, dim1=0, dim2=2).permute(2, 0, 1)], dim=-1)
        flat_obs = obs.reshape(1, b, -1).expand(c, b, -1)
        return torch.cat([flat_obs, actions.reshape(c, b, -1)], dim=-1)

    def own_actions(self, replayed: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
        """Critic i's joint action: the replayed ``[B, N, A]`` with agent i's replaced by
        ``own[i]`` (``own [N, B, A]``) -> ``[N, B, N, A]``."""
        eye = torch.eye(self.n_agents, dtype=torch.bool, device=self.device)[:, None, :, None]
        return torch.where(eye, own.transpose(0, 1)[None], replayed[None])

    def tensors(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """A joint batch ``[1, B, N, ...]`` as tensors ``[B, N, ...]``: observations flat,
        discrete actions one-hot, ``alive`` as float weights ``[N, B]``."""
        t = {k: torch.as_tensor(batch[k][0], device=self.device) for k in ("obs", "action", "reward", "next_obs", "discount", "alive")}
        b = t["obs"].shape[0]
        for key in ("obs", "next_obs"):
            t[key] = network_input(t[key].reshape(b, self.n_agents, -1), self.pixels)
        if self.discrete:
            t["action"] = F.one_hot(t["action"].long(), self.action_dim).float()
        else:
            t["action"] = t["action"].reshape(b, self.n_agents, -1).float()
        t["reward"], t["discount"] = t["reward"].float().T, t["discount"].float().T  # [N, B]
        t["alive"] = t["alive"].float().T
        return t

    def q(self, critics: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
        """Every critic's values ``[n_critics, C, B]``."""
        return torch.stack([c(x).squeeze(-1) for c in critics])

    def joint(self, actions: torch.Tensor) -> torch.Tensor:
        """Every agent's action ``[N, B, A]`` as each critic's joint action ``[C, B, N, A]``."""
        return actions.transpose(0, 1)[None].expand(self.critic_sets, -1, -1, -1)

    def replayed(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        """The critics' input on the batch's own observations and actions."""
        return self.critic_input(t["obs"], t["action"][None].expand(self.critic_sets, -1, -1, -1))

    def team(self, t: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """What a common critic learns from, each ``[1, B]``: the team's reward (the agents'
        rewards summed), its discount (the team goes on while any agent does) and its rows."""
        return t["reward"].sum(0, keepdim=True), t["discount"].max(0, keepdim=True).values, t["alive"].max(0, keepdim=True).values

    def targets(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        """Each agent's critic target ``y [N, B]`` (without gradient)."""
        raise NotImplementedError

    @torch.inference_mode()
    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """``Q_{i,1}(o, a) - y_i`` per critic and row ``[C, B]``."""
        t = self.tensors(batch)
        return (self.q(self.critics[:1], self.replayed(t))[0] - self.targets(t)).cpu().numpy()

    def critic_step(self, t: dict[str, torch.Tensor], optimizer: torch.optim.Optimizer, max_grad_norm: float | None) -> dict[str, float]:
        """One step of every critic toward ``targets``: ``sum_c mean_b (Q_{i,c} - y_i)^2`` per
        agent over the rows it has a step in (a common critic: over the team's rows), each
        agent's gradient clipped on its own."""
        y = self.targets(t)
        rows = self.team(t)[2] if self.common_critic else t["alive"]
        loss = masked_mean(((self.q(self.critics, self.replayed(t)) - y) ** 2).sum(0), rows)
        optimizer.zero_grad(set_to_none=True)
        loss.sum().backward()  # each agent's critic gets its own loss's gradient
        grad_norm = clip_grad_norm_per_set(self.critic_params, self.critic_sets, max_grad_norm)
        optimizer_step(optimizer)
        return {"critic_loss": float(loss.detach().mean()), "grad_norm": float(grad_norm.mean())}

    # ----------------------------------------------------------------- acting
    def act(self, obs: np.ndarray, carry: None, explore: float, mask: np.ndarray | None = None) -> tuple[np.ndarray, None]:
        """Actions ``[P, M, ...]`` for the actor's rows ``obs [P, M, ...]``."""
        with torch.inference_mode():
            flat = network_input(torch.as_tensor(obs.reshape(*obs.shape[:2], -1), device=self.device), self.pixels)
            out = self.actor(flat)
            if mask is not None:
                out = out.masked_fill(~torch.as_tensor(mask, device=self.device), -1e9)
            return self.acting(out, explore), None

    def acting(self, out: torch.Tensor, explore: float) -> np.ndarray:
        raise NotImplementedError

    def sampled_choice(self, logits: torch.Tensor) -> np.ndarray:
        """A sample of each row's softmax (the Gumbel-max of the logits), drawn from the acting
        stream ``rng`` (what an env runner's copy draws from and a checkpoint keeps)."""
        gumbel = -np.log(-np.log(self.rng.uniform(1e-10, 1.0, logits.shape)))
        return (logits.cpu().numpy() + gumbel).argmax(-1)

    def random_actions(self, shape: tuple[int, ...], mask: np.ndarray | None = None) -> np.ndarray:
        if self.discrete:
            allowed = np.ones((*shape, self.action_dim), bool) if mask is None else mask
            return allowed_choice(allowed, self.rng)
        return self.rng.uniform(self._low_np, self._high_np, (*shape, self.action_dim)).astype(np.float32)

    def exploration(self, env_steps: int) -> float:
        return 1.0

    def observe(self, obs: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Nothing to track (no observation normalisation)."""

    def sync_target(self) -> None:
        """Targets follow by soft updates inside ``update``."""

    def squash(self, raw: torch.Tensor) -> torch.Tensor:
        return self.center + self.scale * torch.tanh(raw)

    def straight_through(self, logits: torch.Tensor, temperature: float) -> torch.Tensor:
        """A one-hot Gumbel-softmax sample whose gradient is the relaxed sample's."""
        u = torch.rand(logits.shape, generator=self.generator, device=self.device).clamp_(1e-10, 1.0)
        soft = F.softmax((logits - torch.log(-torch.log(u))) / temperature, dim=-1)
        hard = F.one_hot(soft.argmax(-1), self.action_dim).to(soft.dtype)
        return hard + soft - soft.detach()

    def update(self, batch: dict[str, np.ndarray], weights: Weights = None) -> tuple[None, dict[str, float]]:
        raise NotImplementedError

    def actor_step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer, max_grad_norm: float | None) -> None:
        """One step of every actor on ``loss [N]`` (summed: each agent's actor gets its own
        loss's gradient); the critics it passes through get no gradient."""
        optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(loss.sum(), inputs=self.actor_params)
        clip_grad_norm_per_set(self.actor_params, self.n_sets, max_grad_norm)
        optimizer_step(optimizer)

    def follow(self, tau: float) -> None:
        """Every target network's Polyak step toward its online network (Lillicrap et al. 2016)."""
        online = self.critic_params + (self.actor_params if self.actor_target is not None else [])
        with torch.no_grad():
            torch._foreach_lerp_(self.critic_target_params + self.actor_target_params, online, tau)

    # ----------------------------------------------------------------- state
    def modules(self) -> dict[str, nn.Module]:
        found = {"actor": self.actor, "critics": self.critics, "actor_target": self.actor_target, "critics_target": self.critics_target}
        return {name: module for name, module in found.items() if module is not None}

    def optimizer_map(self) -> dict[str, torch.optim.Optimizer]:
        raise NotImplementedError

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return list(self.optimizer_map().values())

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {name: m.state_dict() for name, m in {**self.modules(), **self.optimizer_map()}.items()}
        state.update(updates=self.updates, generator=self.generator.get_state(), rng=self.rng.bit_generator.state)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, m in {**self.modules(), **self.optimizer_map()}.items():
            m.load_state_dict(state[name])
        self.updates = state["updates"]
        self.generator.set_state(state["generator"])
        self.rng.bit_generator.state = state["rng"]

    def policy_state(self) -> dict[str, Any]:
        return {"actor": self.actor.state_dict()}

    def load_policy_state(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])


def masked_mean(values: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """Per agent, the mean over the rows it has a step in: ``[N, B] -> [N]``."""
    return (values * alive).sum(1) / alive.sum(1).clamp(min=1.0)

