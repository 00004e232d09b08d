"""Policy-gradient algorithms for P parameter sets: PPO (IPPO, MAPPO) and A2C; SEAC adds
its term in ``relayrl.algos.seac``. The learner (``relayrl.algos.on_policy``) fills the
rollouts and computes the advantages; this file holds the networks, the action
distributions and the losses. Arrays are ``[P, B, ...]`` (``relayrl.algos.layout``).

Actor: an MLP from the observation (with parameter sharing, and the agent's one-hot index)
to a categorical over the discrete actions (masked actions get no probability), or to the
mean of a Gaussian with a state-independent log std over Box actions, squashed or clipped
to the bounds (``relayrl.algos.action_distributions``). Critic: an MLP from
what ``critic_input`` names (``relayrl.algos.critic_inputs``) to the value, learnt on returns scaled by
their running mean and variance (``normalize_values``; the value normalisation of Yu et al.
2022). Orthogonal initialisation (``relayrl.nets.mlp``). With ``torso: nature_cnn`` the
observations are screens: one convolutional torso (``relayrl.nets.pixels``) feeds both the
actor's and the critic's layers, as in PPO's Atari agents (Schulman et al. 2017), and the
critic sees what the actor sees.

Loss of each parameter set over the steps its entities took in their episodes (Schulman et
al. 2017, eqs. 7 and 9; Yu et al. 2022 for the clipped value loss):

    policy   -mean min(rho A, clip(rho, 1 - eps, 1 + eps) A),  rho = pi(a|o) / pi_old(a|o)
             (``clip: null``: -mean log pi(a|o) A, the A2C gradient of Mnih et al. 2016)
    value    mean max(l(V - y), l(V_old + clip(V - V_old, -eps_v, eps_v) - y)),  l: huber or square
    total    policy + value_coef * value - entropy_coef * entropy

and each set's gradient is clipped to its own norm.
"""

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from relayrl.algos.action_distributions import BoxActions, categorical
from relayrl.algos.algorithm import allowed_choice
from relayrl.algos.critic_inputs import CRITIC_INPUTS, flat_obs
from relayrl.algos.sections import OnPolicyConfig
from relayrl.core.specs import GroupSpec
from relayrl.nets.mlp import AgentNet
from relayrl.nets.observations import network_input, warn_of_flat_screens
from relayrl.nets.pixels import NatureTorso
from relayrl.nets.stacked import clip_grad_norm_per_set
from relayrl.nets.subnormals import optimizer_step

# what a recurrent update's chunks hold besides per-step rows: the inputs it unrolls over, the
# hidden states it starts from, and which chunks the critic computes (``_outputs``)
UNROLLED = ("obs", "agent", "critic_obs", "actor_h", "critic_h", "begins", "critic_begins", "critic_rows", "critic_inverse")


class ValueScale:
    """Running mean and variance of each parameter set's returns (Chan et al.'s parallel
    update), what the critic's outputs are scaled by."""

    def __init__(self, n_sets: int) -> None:
        self.mean, self.var, self.count = np.zeros(n_sets), np.ones(n_sets), np.full(n_sets, 1e-4)

    def update(self, returns: np.ndarray, valid: np.ndarray) -> None:
        """``returns, valid [P, M]``."""
        n = valid.sum(axis=1)
        mean = np.where(n > 0, (returns * valid).sum(axis=1) / np.maximum(n, 1), 0.0)
        var = np.where(n > 0, (((returns - mean[:, None]) ** 2) * valid).sum(axis=1) / np.maximum(n, 1), 0.0)
        total = self.count + n
        delta = mean - self.mean
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.mean = self.mean + delta * n / total
        self.count = total

    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(self.var, 1e-8))

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.copy(), "var": self.var.copy(), "count": self.count.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean, self.var, self.count = state["mean"].copy(), state["var"].copy(), state["count"].copy()


class PolicyGradient:
    """P actor-critic agents with stacked parameters; ``update`` takes one gradient step on
    one minibatch of rollout steps ``[P, B, ...]``."""

    loss_metric = "value_loss"
    exploration_name = None
    checked_metrics = ("policy_loss", "grad_norm")
    metric_columns: tuple[str, ...] = ("policy_loss", "entropy", "approx_kl", "clip_fraction")

    def __init__(self, spec: GroupSpec, config: OnPolicyConfig, n_sets: int, device: torch.device, seed: int) -> None:
        torch.manual_seed(seed)
        self.spec, self.config, self.n_sets, self.device = spec, config, n_sets, device
        self.n = spec.n_agents
        self.index = config.param_sharing and config.agent_id and n_sets == 1
        c = config
        self.torso = NatureTorso(n_sets, spec.obs_shape, spec.pixels).to(device) if c.torso == "nature_cnn" else None
        own = int(np.prod(spec.obs_shape)) if self.torso is None else self.torso.out_features
        if self.torso is None:
            warn_of_flat_screens(spec, "the actor's first layer", own * c.hidden[0], "set on_policy.torso=nature_cnn to read them through convolutions")
        width = own + (self.n if self.index else 0)
        self.box = BoxActions(spec, c.action_bounds, device) if spec.continuous else None
        outputs = int(np.prod(spec.action_shape)) if spec.continuous else spec.n_actions
        self.recurrent = c.recurrent
        self.actor = AgentNet(n_sets, width, c.hidden, outputs, c.activation, 0.01, c.recurrent).to(device)
        self.log_std = nn.Parameter(torch.full((n_sets, 1, outputs), c.log_std_init, device=device)) if spec.continuous else None
        probe = np.zeros((1, self.n, *spec.obs_shape), np.float32)
        state = np.zeros((1, *spec.state_shape), np.float32) if spec.state_shape else None
        self.critic_width = width if self.torso is not None else self.critic_features(probe, state).shape[-1]
        if c.critic_input in ("state", "agent_state"):
            warn_of_flat_screens(spec, "the critic's first layer", self.critic_width * c.hidden[0], "give the critic a smaller state, "
                                 "or its agents' own observations through convolutions (on_policy.critic_input=obs, torso=nature_cnn)", state=True)
        self.critic = AgentNet(n_sets, self.critic_width, c.hidden, 1, c.activation, 1.0, c.recurrent).to(device)
        # one critic for the group on an input every agent shares (the env's state, or all the
        # observations): its value is one per env step, computed once for the N agents' rows
        # where they come whole (acting; in training, minibatches of whole env steps, or the
        # one minibatch of the whole rollout), and a recurrent one keeps one memory per env
        # copy, which begins with the copy's episode
        self.value_per_step = n_sets == 1 and self.torso is None and c.critic_input in ("state", "joint_obs")
        self.whole_steps = self.value_per_step and (c.minibatch_unit == "env_step" or c.minibatches == 1)
        torso = [*self.torso.parameters()] if self.torso is not None else []
        self.parameters = [*torso, *self.actor.parameters(), *self.critic.parameters(), *([self.log_std] if self.log_std is not None else [])]
        self.optimizer = torch.optim.Adam(self.parameters, lr=c.lr, eps=c.adam_eps)
        self.scale = ValueScale(n_sets) if c.normalize_values else None
        self.identity = torch.eye(self.n, device=device)
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ inputs
    def critic_features(self, obs: np.ndarray, state: np.ndarray | None) -> np.ndarray:
        """The critic's inputs ``[..., N, F_c]`` from the group's observations ``[..., N, *obs]``
        (with a torso: the observations themselves, which it shares with the actor)."""
        if self.torso is not None:
            return obs
        return CRITIC_INPUTS[self.config.critic_input](flat_obs(obs, self.spec), state, self.spec, self.index)

    def _actor_in(self, obs: torch.Tensor, agent: torch.Tensor) -> torch.Tensor:
        """Observations ``[P, ..., *obs]`` and each row's agent ``[P, ...]`` -> the actor's features."""
        x = network_input(obs.reshape(*agent.shape, -1), self.spec.pixels) if self.torso is None else self.torso(obs.reshape(*agent.shape, *self.spec.obs_shape))
        return torch.cat([x, self.identity[agent.long()]], dim=-1) if self.index else x

    def _critic_in(self, critic_obs: torch.Tensor, agent: torch.Tensor) -> torch.Tensor:
        """The critic's stored inputs ``[P, ..., F_c]`` (with a torso: observations) -> its features."""
        return critic_obs.float() if self.torso is None else self._actor_in(critic_obs, agent)

    def _rows_agent(self, rows: int) -> torch.Tensor:
        """The agent of each row of an acting call ``[P, M]``: rows are agent-minor with one set."""
        return (torch.arange(rows, device=self.device) % self.n).expand(self.n_sets, rows)

    def values(self, critic_obs: np.ndarray | torch.Tensor, agent: torch.Tensor) -> torch.Tensor:
        """The feed-forward critic's outputs ``[P, M]`` on its inputs ``[P, M, F_c]`` of the
        agents ``[P, M]`` (in its own units: ``to_returns`` maps them back)."""
        return self._values(self._critic_in(torch.as_tensor(critic_obs, device=self.device), agent))[0]

    def _values(self, x: torch.Tensor, h: torch.Tensor | None = None, whole: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The critic's step on its features ``[P, M, F_c]`` (a recurrent one's from ``h [P, M,
        H]``) -> values ``[P, M]`` and the hidden states after it. With ``value_per_step`` and
        ``whole`` the rows come as whole env steps, agent-minor (as the rollout stores them),
        and each step's first row is computed for all its agents."""
        if not (self.value_per_step and whole):
            value, h = self.critic(x, h)
            return value.squeeze(-1), h
        n = self._agents_per_row(x.shape[1])
        value, h = self.critic(x[:, ::n], None if h is None else h[:, ::n])
        return value.squeeze(-1).repeat_interleave(n, dim=1), None if h is None else h.repeat_interleave(n, dim=1)

    def _critic_unroll(self, x: torch.Tensor, h: torch.Tensor, begins: torch.Tensor, whole: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The recurrent critic over chunks ``[P, L, C, F_c]`` (``AgentNet.unroll``) from the
        beginnings of its memory ``begins [P, L, C]``. With ``value_per_step`` that memory is
        one per env copy (``critic_begins``), and with ``whole`` (chunks of all the copy's
        agents, agent-minor) it runs once, on each copy's first row."""
        if not (self.value_per_step and whole):
            return self.critic.unroll(x, h, begins)
        n = self._agents_per_row(x.shape[2])
        value, states = self.critic.unroll(x[:, :, ::n], h[:, ::n], begins[:, :, ::n])
        return value.repeat_interleave(n, dim=2), states.repeat_interleave(n, dim=2)

    def critic_begins(self, begins: torch.Tensor) -> torch.Tensor:
        """Where the critic's memory begins ``[P, L, C]`` from the agents' beginnings (agent-minor
        rows): with ``value_per_step``, where all the copy's agents begin (an agent's own end
        does not reset the copy's memory); else each agent's own."""
        if not self.value_per_step:
            return begins
        p, steps, rows = begins.shape
        n = self._agents_per_row(rows)
        return begins.reshape(p, steps, rows // n, n).all(-1).repeat_interleave(n, dim=2)

    def _agents_per_row(self, rows: int) -> int:
        if rows % self.n:
            raise ValueError(f"{rows} critic rows are not whole env steps of {self.n} agents")
        return self.n

    def _carry_sets(self, carry: torch.Tensor) -> torch.Tensor:
        """A hidden state per entity ``[W, N, H]`` -> per set ``[P, M, H]`` (the rows of ``act``)."""
        return carry.reshape(1, -1, carry.shape[-1]) if self.n_sets == 1 else carry.transpose(0, 1)

    def _carry_entities(self, h: torch.Tensor) -> torch.Tensor:
        return h.reshape(-1, self.n, h.shape[-1]) if self.n_sets == 1 else h.transpose(0, 1)

    def _moments(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each set's returns' mean and std, shaped to broadcast over ``like [P, ...]``."""
        assert self.scale is not None
        shape = (-1, *[1] * (like.dim() - 1))
        return tuple(torch.as_tensor(v, device=self.device, dtype=like.dtype).view(shape) for v in (self.scale.mean, self.scale.std()))  # type: ignore[return-value]

    def to_scaled(self, returns: torch.Tensor) -> torch.Tensor:
        """Returns ``[P, ...]`` in the critic's units."""
        if self.scale is None:
            return returns
        mean, std = self._moments(returns)
        return (returns - mean) / std

    def to_returns(self, scaled: torch.Tensor) -> torch.Tensor:
        """The critic's outputs ``[P, ...]`` in the returns' units."""
        if self.scale is None:
            return scaled
        mean, std = self._moments(scaled)
        return scaled * std + mean

    # ------------------------------------------------------------------ acting
    @torch.inference_mode()
    def act(self, obs: np.ndarray, carry: torch.Tensor | None, explore: float, mask: np.ndarray | None = None) -> tuple[np.ndarray, torch.Tensor | None]:
        """Actions ``[P, M, ...]`` drawn from the policy (``explore > 0``) or its mode; a
        recurrent actor's ``carry`` is its hidden state per entity ``[W, N, H]`` (None: zeros,
        an episode's start; the rollout zeroes the rows of entities whose episode ended)."""
        h = None
        if self.recurrent:
            rows = obs.shape[1] * self.n_sets // self.n
            # a resumed run's carry is read back from its checkpoint on the CPU
            carry = torch.zeros(rows, self.n, self.actor.hidden_size, device=self.device) if carry is None else carry.to(self.device)
            h = self._carry_sets(carry)
        out, h = self.actor(self._actor_in(torch.as_tensor(obs, device=self.device), self._rows_agent(obs.shape[1])), h)
        carry = None if h is None else self._carry_entities(h)
        if self.box is None:
            logits = out if mask is None else out.masked_fill(~torch.as_tensor(mask, device=self.device), -torch.inf)
            logits = logits.cpu().numpy()
            return (logits + self.rng.gumbel(size=logits.shape) if explore > 0 else logits).argmax(-1), carry  # Gumbel-max draws
        assert self.log_std is not None
        mean = out.cpu().numpy().reshape(*obs.shape[:2], *self.spec.action_shape)
        if explore > 0:
            std = self.log_std.exp().cpu().numpy().reshape(self.n_sets, 1, *self.spec.action_shape)
            mean = mean + std * self.rng.standard_normal(mean.shape)
        return self.box.to_bounds(mean).astype(np.float32), carry

    def random_actions(self, shape: tuple[int, ...], mask: np.ndarray | None = None) -> np.ndarray:
        if self.box is not None:
            return self.rng.uniform(self.box.low, self.box.high, (*shape, *self.spec.action_shape)).astype(np.float32)
        return self.rng.integers(0, self.spec.n_actions, shape) if mask is None else allowed_choice(mask, self.rng)

    def exploration(self, env_steps: int) -> float:
        """The policy's own randomness explores: draws while training, its mode in evaluations."""
        return 1.0

    def observe(self, obs: np.ndarray, mask: np.ndarray) -> None:
        """It keeps no statistics of its observations."""

    # ------------------------------------------------------------------ learning
    def distribution(self, out: torch.Tensor, action: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(a|o)`` and the policy's entropy ``[P, R]`` from the actor's outputs ``[P, R, out]``."""
        if self.box is None:
            return categorical(out, action, mask)
        assert self.log_std is not None
        log_std = self.log_std.expand_as(out)
        entropy = (log_std + 0.5 * np.log(2 * np.pi * np.e)).sum(-1)  # the Gaussian's (before squashing or clipping)
        return self.box.log_prob(out, log_std, action.reshape(*out.shape)), entropy

    def evaluate(self, obs: torch.Tensor, agent: torch.Tensor, action: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The feed-forward actor's ``log pi(a|o)`` and entropy ``[P, M]`` on rows ``[P, M, ...]``."""
        return self.distribution(self.actor(self._actor_in(obs, agent))[0], action, mask)

    def _outputs(self, b: dict[str, torch.Tensor], whole: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Actor outputs ``[P, R, out]`` and critic outputs ``[P, R]`` on steps ``[P, B, ...]``
        (feed-forward), or on chunks of steps ``[P, L, B, ...]`` from the hidden states
        ``actor_h``, ``critic_h [P, B, H]`` with ``begins`` and ``critic_begins [P, L, B]``
        (recurrent; R = L x B, and the hidden states after each step come back too). ``whole``:
        the rows are whole env steps (``_values``). ``critic_rows`` and ``critic_inverse``: the
        critic runs on those rows only and each row takes the value of ``critic_rows[inverse]``
        (rows of the same env step, or the same env copy's chunk, have the same critic input
        and memory with ``value_per_step``)."""
        x = self._actor_in(b["obs"], b["agent"])
        critic_x = x if self.torso is not None else b["critic_obs"].float()  # a torso's features serve both
        rows, inverse = b.get("critic_rows"), b.get("critic_inverse")
        if not self.recurrent:
            if rows is None:
                return self.actor(x)[0], self._values(critic_x, whole=whole)[0], None, None
            return self.actor(x)[0], self._values(critic_x[:, rows], whole=False)[0][:, inverse], None, None
        out, actor_h = self.actor.unroll(x, b["actor_h"], b["begins"])
        if rows is None:
            value, critic_h = self._critic_unroll(critic_x, b["critic_h"], b["critic_begins"], whole)
        else:
            value, critic_h = self._critic_unroll(critic_x[:, :, rows], b["critic_h"][:, rows], b["critic_begins"][:, :, rows], False)
            value, critic_h = value[:, :, inverse], critic_h[:, :, inverse]
        return out.flatten(1, 2), value.squeeze(-1).flatten(1, 2), actor_h, critic_h

    @torch.inference_mode()
    def behaviour(self, rows: dict[str, np.ndarray | torch.Tensor]) -> dict[str, torch.Tensor]:
        """What the networks compute for a fragment's steps ``[P, L, B, ...]`` in the order
        they were taken (``obs``, ``agent``, ``action``, ``action_mask``, ``critic_obs``,
        ``next_critic_obs``; recurrent: the hidden states before the first step, ``actor_h``
        and ``critic_h [P, B, H]``, and ``begins``): ``logp``, ``scaled`` (the critic's
        outputs) and ``next_scaled`` (of the observations after each step) ``[P, L, B]``;
        recurrent: ``actor_h`` and ``critic_h``, the hidden states each step began with
        ``[P, L, B, H]``, and ``actor_last``/``critic_last``, those after the last step."""
        b = {k: torch.as_tensor(v, device=self.device) for k, v in rows.items()}
        p, steps, width = b["agent"].shape[0], b["agent"].shape[1], b["agent"].shape[2]
        if not self.recurrent:
            flat = {k: v.flatten(1, 2) for k, v in b.items()}
            out, scaled, _, _ = self._outputs(flat, whole=True)
            logp = self.distribution(out, flat["action"], flat.get("action_mask"))[0]
            next_scaled = self.values(flat["next_critic_obs"], flat["agent"])
            return {k: v.reshape(p, steps, width) for k, v in (("logp", logp), ("scaled", scaled), ("next_scaled", next_scaled))}
        b["critic_begins"] = self.critic_begins(b["begins"])
        out, scaled, actor_h, critic_h = self._outputs(b, whole=True)
        logp = self.distribution(out, b["action"].flatten(1, 2), b["action_mask"].flatten(1, 2) if "action_mask" in b else None)[0]
        # V(o') continues the critic's memory: one more step from the state after each step
        following, _ = self._values(self._critic_in(b["next_critic_obs"].flatten(1, 2), b["agent"].flatten(1, 2)), critic_h.flatten(1, 2))
        started = {
            name: torch.cat([b[name].unsqueeze(1), states[:, :-1]], dim=1) * (~starts).unsqueeze(-1).float()
            for name, states, starts in (("actor_h", actor_h, b["begins"]), ("critic_h", critic_h, b["critic_begins"]))
        }
        return {
            "logp": logp.reshape(p, steps, width),
            "scaled": scaled.reshape(p, steps, width),
            "next_scaled": following.reshape(p, steps, width),
            **started,
            "actor_last": actor_h[:, -1],
            "critic_last": critic_h[:, -1],
        }

    def _value_loss(self, error: torch.Tensor) -> torch.Tensor:
        c = self.config
        return F.huber_loss(error, torch.zeros_like(error), reduction="none", delta=c.huber_delta) if c.value_loss == "huber" else error**2

    def own_loss(self, b: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Each set's PPO or A2C loss ``[P]`` on its own rows and the metrics' parts."""
        c = self.config
        out, scaled, _, _ = self._outputs(b, whole=self.whole_steps)
        if self.recurrent:  # chunks [P, L, B] -> rows [P, L x B]
            b = {k: v if k in UNROLLED else v.flatten(1, 2) for k, v in b.items()}
        valid = b["valid"].float()
        count = valid.sum(dim=1).clamp(min=1)
        logp, entropy = self.distribution(out, b["action"], b.get("action_mask"))
        advantage = b["advantage"]
        log_ratio = logp - b["logp"]
        ratio = log_ratio.exp()
        if c.clip is None:
            surrogate = logp * advantage
        else:
            surrogate = torch.min(ratio * advantage, ratio.clamp(1 - c.clip, 1 + c.clip) * advantage)
        policy = -(surrogate * valid).sum(dim=1) / count
        target = self.to_scaled(b["returns"])
        loss_v = self._value_loss(scaled - target)
        if c.value_clip is not None:
            clipped = b["scaled_value"] + (scaled - b["scaled_value"]).clamp(-c.value_clip, c.value_clip)
            loss_v = torch.max(loss_v, self._value_loss(clipped - target))
        value = (loss_v * valid).sum(dim=1) / count
        entropy_mean = (entropy * valid).sum(dim=1) / count
        with torch.no_grad():
            parts = {
                "policy_loss": policy,
                "value_loss": value,
                "entropy": entropy_mean,
                "approx_kl": (((ratio - 1) - log_ratio) * valid).sum(dim=1) / count,  # Schulman's low-variance estimator
                "clip_fraction": (((ratio - 1).abs() > (c.clip or np.inf)).float() * valid).sum(dim=1) / count,
            }
        return policy + c.value_coef * value - c.entropy_coef * entropy_mean, parts

    def extra_loss(self, b: dict[str, torch.Tensor]) -> tuple[torch.Tensor | float, dict[str, float]]:
        """What an algorithm adds to each set's loss (SEAC: the other agents' steps)."""
        return 0.0, {}

    def update(self, batch: dict[str, np.ndarray], weights: Any = None) -> tuple[None, dict[str, float]]:
        """One gradient step of every set on one minibatch ``[P, B, ...]``: ``obs``, ``agent``,
        ``action``, ``action_mask`` (masked envs), ``critic_obs``, ``logp`` (the behaviour's),
        ``scaled_value`` (the critic's output when it acted), ``advantage``, ``returns`` and
        ``valid``; plus what ``extra_loss`` reads."""
        b = {k: torch.as_tensor(v, device=self.device) for k, v in batch.items()}
        own, parts = self.own_loss(b)
        extra, extra_metrics = self.extra_loss(b)
        self.optimizer.zero_grad(set_to_none=True)
        (own + extra).sum().backward()  # the sets share no parameters: each gets its own gradient
        grad_norm = clip_grad_norm_per_set(self.parameters, self.n_sets, self.config.max_grad_norm)
        optimizer_step(self.optimizer)
        metrics = {k: float(v.detach().mean()) for k, v in parts.items()}
        metrics.update(extra_metrics, grad_norm=float(grad_norm.mean()))
        return None, metrics

    def td_error(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError("policy-gradient learners score their steps by |advantage| (relayrl.algos.on_policy)")

    def sync_target(self) -> None:
        """It has no target networks."""

    # ------------------------------------------------------------------ state
    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.optimizer]

    def policy_state(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            **({"torso": self.torso.state_dict()} if self.torso is not None else {}),
            **({"log_std": self.log_std.detach().clone()} if self.log_std is not None else {}),
        }

    def load_policy_state(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        if self.torso is not None:
            self.torso.load_state_dict(state["torso"])
        if self.log_std is not None:
            with torch.no_grad():
                self.log_std.copy_(state["log_std"])

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.policy_state(),
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scale": None if self.scale is None else self.scale.state_dict(),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_policy_state(state)
        self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scale is not None:
            self.scale.load_state_dict(state["scale"])
        self.rng.bit_generator.state = state["rng"]


def make_policy_gradient(spec: GroupSpec, config: OnPolicyConfig, n_sets: int, device: torch.device, seed: int, **_: object) -> PolicyGradient:
    return PolicyGradient(spec, config, n_sets, device, seed)
