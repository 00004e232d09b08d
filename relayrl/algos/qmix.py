"""Value decomposition over recurrent agents, trained on whole episodes: independent
Q-learning (``mixer: none``), VDN and QMIX, optionally weighted by MAC-PO (paper 002; SPEC
§1.3-1.4; paper 003).

Agents: one GRU network (64 units) shared by the group's agents, fed each agent's
observation, a one-hot of its index and of its previous action (zeros at an episode's
start), as pymarl's agents are (Rashid et al. 2018); ``param_sharing: false`` gives each
agent its own parameter set instead. The hidden state is carried by the rollout and starts
at zeros in every episode.

Update on a span of B episodes ``[B, T(+1), N, ...]`` (SPEC §1.3; ``relayrl.replay.spans``):
the agents' Q-values over the whole episode, Q_tot = mixer(chosen Q-values, state_t), double-Q targets (the online
agents choose the next actions among the allowed ones, the target networks value them) and
TD(lambda) returns (lambda 0.6, ``relayrl.algos.returns``), loss
sum w * (Q_tot - y)^2 / sum mask with w = 1, or MAC-PO's Lemma 1 weight
(``relayrl.algos.macpo``). Q* for that weight comes from an unrestricted central network
(feed-forward over the state and the agents' chosen Q-values, weighted QMIX's "ff" central
mixer of 256 units; Rashid et al. 2020) trained alongside on its own TD(lambda) targets,
bootstrapped from its target copy at the agents' greedy next actions; ``bootstrap: central``
takes Q_tot's returns from that target Q* too, as weighted QMIX and the AccMER reference code do.
Independent Q-learning learns per agent from each agent's own reward and end flags.
With ``sequence_length`` an update trains spans instead, after up to ``burn_in`` steps
that only warm the hidden state, cut from stored episodes or (``storage: transitions``)
gathered from stored transitions; ``tbptt`` truncates backpropagation (paper 003).
"""

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from relayrl.algos.algorithm import allowed_choice, wrong_actions
from relayrl.algos.episode_learner import storage_fields
from relayrl.algos.macpo import macpo_weights, taken_action_probability
from relayrl.algos.returns import td_lambda_targets
from relayrl.algos.schedules import linear_schedule
from relayrl.core.errors import ConfigError
from relayrl.algos.sections import ValueDecompositionConfig
from relayrl.core.specs import STATE_SOURCE, GroupSpec
from relayrl.nets.gru import RecurrentQNetwork
from relayrl.nets.mixers import QMixer, VDNMixer
from relayrl.nets.observations import network_input, warn_of_flat_screens
from relayrl.nets.subnormals import optimizer_step
from relayrl.replay import ReplayPlan


class CentralQ(nn.Module):
    """Q*(s, u): a feed-forward network of the state and the agents' chosen Q-values, with no
    monotonicity constraint (weighted QMIX's central mixer)."""

    def __init__(self, n_agents: int, state_size: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(state_size + n_agents, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, agent_q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([state, agent_q], dim=-1)).squeeze(-1)


MIXERS = {
    "qmix": lambda n, s, c: QMixer(n, s, c.mixer_embed, c.hypernet_hidden),
    "vdn": lambda n, s, c: VDNMixer(),
    "none": lambda n, s, c: None,
}


class ValueDecomposition:
    """The group's agents (``[W, N, ...]`` per entity), their mixer and targets."""

    loss_metric = "td_loss"
    exploration_name = "epsilon"
    checked_metrics = ("grad_norm",)

    def __init__(self, spec: GroupSpec, config: ValueDecompositionConfig, device: torch.device, seed: int) -> None:
        if config.mixer == "qmix" and not spec.state_shape:
            raise ConfigError(f"{spec.name!r}: the QMIX mixer reads the env's global state, and this env gives none ({STATE_SOURCE}): declare the env's state_space, or set qmix.mixer=vdn or none")
        torch.manual_seed(seed)
        self.config = c = config
        self.device = device
        self.n, self.n_actions = spec.n_agents, spec.n_actions
        self.obs_size = int(np.prod(spec.obs_shape))
        self.obs_rank = len(spec.obs_shape)
        self.pixels = spec.pixels
        self.n_sets = 1 if c.param_sharing else self.n
        self.state_size = int(np.prod(spec.state_shape)) if spec.state_shape else 0
        inputs = self.obs_size + (self.n if c.agent_id and c.param_sharing else 0) + (self.n_actions if c.last_action else 0)
        warn_of_flat_screens(spec, "the agents' first layer", inputs * c.hidden, "QMIX's agents have no convolutional torso: shrink the screens, "
                             "or train PPO with on_policy.torso=nature_cnn")
        self.agent = RecurrentQNetwork(self.n_sets, inputs, self.n_actions, c.hidden).to(device)
        self.mixer = MIXERS[c.mixer](self.n, self.state_size, c)
        if c.mixer == "qmix":
            warn_of_flat_screens(spec, "the mixer's hypernetworks", sum(p.numel() for p in self.mixer.parameters()),
                                 "give the env a smaller state_space, or set qmix.mixer=vdn (no state)", state=True)
        self.central = CentralQ(self.n, self.state_size, c.central_hidden) if c.weighting == "macpo" else None
        modules = {"agent": self.agent, "mixer": self.mixer, "central": self.central}
        self.learned = nn.ModuleDict({k: m for k, m in modules.items() if m is not None}).to(device)
        self.target = copy.deepcopy(self.learned).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.learned.parameters(), lr=c.lr)
        # the agents and mixer are clipped together, the central Q* on its own (two losses)
        self.clipped = [p for k, m in self.learned.items() if k != "central" for p in m.parameters()]
        self.identity = torch.eye(self.n, device=device)
        self.action_one_hot = torch.eye(self.n_actions, device=device)  # indexed: a one-hot per action without F.one_hot's checks
        self.rng = np.random.default_rng(seed)
        self.metric_columns: tuple[str, ...] = ("q_taken", "central_loss", "weight_max") if self.central is not None else ("q_taken",)

    # ------------------------------------------------------------------ layout
    def _inputs(self, obs: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """``obs [..., N, *obs_shape]`` and the previous actions' one-hots ``[..., N, A]`` ->
        agent inputs ``[..., N, F]``."""
        lead = obs.shape[: obs.dim() - self.obs_rank]  # [..., N]
        parts = [network_input(obs.reshape(*lead, self.obs_size), self.pixels)]
        if self.config.agent_id and self.config.param_sharing:
            parts.append(self.identity.expand(*lead, self.n))
        if self.config.last_action:
            parts.append(last)
        return torch.cat(parts, dim=-1)

    def _to_sets(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., N, F]`` -> ``[P, M, F]`` (the one shared set holds every entity's rows)."""
        if self.n_sets == 1:
            return x.reshape(1, -1, x.shape[-1])
        return x.movedim(-2, 0).reshape(self.n, -1, x.shape[-1])

    def _from_sets(self, y: torch.Tensor, lead: tuple[int, ...]) -> torch.Tensor:
        """Inverse of ``_to_sets``: ``[P, M, F]`` -> ``[*lead, N, F]``."""
        if self.n_sets == 1:
            return y.reshape(*lead, self.n, y.shape[-1])
        return y.reshape(self.n, *lead, y.shape[-1]).movedim(0, -2)

    # ------------------------------------------------------------------ acting
    def exploration(self, env_steps: int) -> float:
        c = self.config
        return linear_schedule(c.epsilon_start, c.epsilon_end, c.epsilon_steps, env_steps)

    def act(self, obs: np.ndarray, carry: Any, explore: float, mask: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """``obs [W, N, ...]`` -> actions ``[W, N]`` (epsilon-greedy within ``mask``) and the
        carry ``{"h": [W, N, H], "last": [W, N, A]}`` (None: an episode's start)."""
        w = obs.shape[0]
        if carry is None:
            carry = {"h": torch.zeros(w, self.n, self.config.hidden, device=self.device), "last": torch.zeros(w, self.n, self.n_actions, device=self.device)}
        else:  # a resumed run's carry is read back from its checkpoint on the CPU
            carry = {key: value.to(self.device) for key, value in carry.items()}
        with torch.no_grad():
            x = self._inputs(torch.as_tensor(obs, device=self.device), carry["last"])
            q, h = self.agent(self._to_sets(x), self._to_sets(carry["h"]))
            q = self._from_sets(q, (w,))
            if mask is not None:
                q = q.masked_fill(~torch.as_tensor(mask, device=self.device), -torch.inf)
            actions = q.argmax(dim=-1).cpu().numpy()
        if explore > 0:
            allowed = np.ones((w, self.n, self.n_actions), bool) if mask is None else mask
            explores = self.rng.random((w, self.n)) < explore
            actions = np.where(explores, allowed_choice(allowed, self.rng), actions)
        last = self.action_one_hot[torch.as_tensor(actions, device=self.device, dtype=torch.long)]
        return actions, {"h": self._from_sets(h, (w,)), "last": last}

    # ------------------------------------------------------------------ learning
    def _agent_q(self, network: RecurrentQNetwork, obs: torch.Tensor, last: torch.Tensor, cut: torch.Tensor | None) -> torch.Tensor:
        """Q-values ``[B, K, N, A]`` over spans of K steps from zero hidden states, each row's
        hidden state detached before the steps ``cut [B, K]`` marks (None: no row's)."""
        b, k = obs.shape[:2]
        x = self._inputs(obs, last)  # [B, K, N, F]
        cuts = None
        if self.n_sets == 1:
            sets = x.permute(1, 0, 2, 3).reshape(1, k, b * self.n, -1)
            if cut is not None:
                cuts = cut[:, :, None].expand(b, k, self.n).permute(1, 0, 2).reshape(k, b * self.n)
        else:
            sets = x.permute(2, 1, 0, 3)  # [N, K, B, F]
            if cut is not None:
                cuts = cut[:, :, None].expand(b, k, self.n).permute(1, 2, 0).reshape(k, self.n, b)  # [K, N, B]
        q = network.unroll(sets, network.initial(self.n_sets, sets.shape[2], obs.device), cuts)
        if self.n_sets == 1:
            return q.reshape(k, b, self.n, -1).permute(1, 0, 2, 3)
        return q.permute(2, 1, 0, 3)

    def update(self, span: dict[str, np.ndarray], weights: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, float]]:
        """One gradient step on a span (``relayrl.replay.spans``: B rows of whole episodes
        or spans of them), each row's loss scaled by ``weights [B]`` (prioritized replay's
        importance weights) where given; returns each row's weight (MAC-PO's mean over its
        trained steps, else its mean |td|: what AccMER's table and the priorities keep) and
        metrics."""
        tensors = {name: torch.as_tensor(value, device=self.device) for name, value in span.items()}
        importance = None if weights is None else torch.as_tensor(weights, device=self.device)
        out = self.losses(tensors, importance, bool(tensors["cut"].any()))
        self.optimizer.zero_grad(set_to_none=True)
        (out["loss"] + out["central_loss"] if self.central is not None else out["loss"]).backward()
        grad_norm = nn.utils.clip_grad_norm_(self.clipped, self.config.grad_clip)
        if self.central is not None:
            nn.utils.clip_grad_norm_(self.central.parameters(), self.config.grad_clip)
        optimizer_step(self.optimizer)
        metrics = {"td_loss": out["loss"].item(), "grad_norm": float(grad_norm), "q_taken": out["q_taken"].item()}
        if self.central is not None:
            metrics.update(central_loss=out["central_loss"].item(), weight_max=out["weight_max"].item())
        return out["priorities"].cpu().numpy(), metrics

    def losses(self, span: dict[str, torch.Tensor], importance: torch.Tensor | None, has_cut: bool) -> dict[str, torch.Tensor]:
        """What ``update`` differentiates, as tensors: the loss (and Q*'s, ``central_loss``),
        each row's priority and the metrics' values, from the span's tensors. ``has_cut``:
        whether any row detaches its hidden state, decided by the caller so that this
        computation has no data-dependent branch (it compiles whole:
        ``benchmarks/marl_update_options.py``)."""
        c = self.config
        obs, actions = span["obs"], span["action"].long()
        t = actions.shape[1]
        avail = span["action_mask"] if "action_mask" in span else torch.ones(*obs.shape[:3], self.n_actions, dtype=torch.bool, device=obs.device)
        reward, terminated, truncated, valid = span["reward"].float(), span["terminated"], span["truncated"], span["valid"]
        exists, trained, ends = span["exists"], span["trained"], span["ends"]
        previous = span["previous"]
        last = self.action_one_hot[previous.clamp(min=0)] * (previous >= 0).unsqueeze(-1)  # [B, K+1, N, A]
        cuts = span["cut"] if has_cut else None

        q = self._agent_q(self.agent, obs, last, cuts)  # [B, K+1, N, A]
        with torch.no_grad():
            target_q = self._agent_q(self.target["agent"], obs, last, cuts)
            following = q[:, 1:] if c.double_q else target_q[:, 1:]
            following = following.masked_fill(~avail[:, 1:], -torch.inf).argmax(dim=-1, keepdim=True)
            next_q = target_q[:, 1:].gather(-1, following).squeeze(-1)  # [B, K, N]
        chosen = q[:, :t].gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # [B, K, N]

        if self.mixer is None:  # independent learners: each agent's own reward and ends
            q_tot, present = chosen, valid & exists.unsqueeze(-1)
            mask = (present & trained.unsqueeze(-1)).float()
            with torch.no_grad():
                y = td_lambda_targets(reward, next_q, terminated, truncated, present, c.gamma, c.td_lambda)
        else:
            state = span["state"].float().reshape(obs.shape[0], t + 1, -1) if self.state_size else obs.new_zeros(obs.shape[0], t + 1, 0).float()
            q_tot = self.mixer(chosen, state[:, :t])
            mask = trained.float()
            cut = ends & truncated.any(dim=-1)
            with torch.no_grad():
                next_tot = self.target["mixer"](next_q, state[:, 1:])
                y = td_lambda_targets(reward.sum(dim=-1), next_tot, ends & ~cut, cut, exists, c.gamma, c.td_lambda)
        out: dict[str, torch.Tensor] = {}
        loss_weights = mask
        if self.central is not None:  # Q* learns its own targets, unrestricted (weighted QMIX's central Q)
            with torch.no_grad():
                next_star = self.target["central"](next_q, state[:, 1:])
                y_star = td_lambda_targets(reward.sum(dim=-1), next_star, ends & ~cut, cut, exists, c.gamma, c.td_lambda)
            if c.bootstrap == "central":  # weighted QMIX: Q_tot fits Q*'s returns (Rashid et al. 2020)
                y = y_star
            q_star = self.central(chosen.detach(), state[:, :t])
            out["central_loss"] = (((q_star - y_star) * mask) ** 2).sum() / mask.sum()
            pi = taken_action_probability(q[:, :t].detach(), actions, avail[:, :t])
            loss_weights = macpo_weights(q_tot.detach(), y, q_star.detach(), pi, mask)
            out["weight_max"] = loss_weights.max()
        td = (q_tot - y) * mask
        squared = loss_weights * td**2
        if importance is not None:
            squared = squared * importance.reshape(-1, *[1] * (squared.dim() - 1))
        out["loss"] = squared.sum() / mask.sum()
        per_step = (loss_weights if self.central is not None else td.abs()).detach()
        reduce = tuple(range(1, per_step.dim()))
        out["priorities"] = per_step.sum(dim=reduce) / mask.sum(dim=reduce).clamp(min=1)
        counted = valid & trained.unsqueeze(-1)
        out["q_taken"] = (chosen.detach() * counted).sum() / counted.sum().clamp(min=1)
        return out

    def sync_target(self) -> None:
        self.target.load_state_dict(self.learned.state_dict())

    # ------------------------------------------------------------------ state
    def policy_state(self) -> dict[str, Any]:
        return {"agent": self.agent.state_dict()}

    def load_policy_state(self, state: dict[str, Any]) -> None:
        self.agent.load_state_dict(state["agent"])

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.optimizer]

    def state_dict(self) -> dict[str, Any]:
        return {"learned": self.learned.state_dict(), "target": self.target.state_dict(), "optimizer": self.optimizer.state_dict(), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learned.load_state_dict(state["learned"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]


def make_qmix(spec: GroupSpec, config: ValueDecompositionConfig, n_sets: int, device: torch.device, seed: int, **options: Any) -> ValueDecomposition:
    return ValueDecomposition(spec, config, device, seed)


def qmix_plan(spec: GroupSpec, config: ValueDecompositionConfig) -> ReplayPlan:
    if spec.continuous:
        raise wrong_actions(spec, "qmix and its family")
    return ReplayPlan(1, config.buffer_size, storage_fields(spec, config), config.sampler == "prioritized")


