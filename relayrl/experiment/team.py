"""One team of a run: an agent group with its learner, replay, relay and role.

A team is the unit the SUPER experiments train (paper 000, section 5.3): all pursuers in
Pursuit; in Battle and Adversarial-Pursuit the sharing team (blue / prey) against an
opposing team that is either frozen (pretrained, learning off) or co-evolving (independent
DDQN trained at the same time).
"""

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from relayrl.algos.dqn import DQNLearner, DQNSettings
from relayrl.algos.nstep import NStepBuilder, Transitions
from relayrl.algos.schedules import linear_schedule
from relayrl.core.errors import CheckpointError, ConfigError, NonFiniteError
from relayrl.core.seeding import derive_seeds
from relayrl.core.specs import GroupSpec
from relayrl.experiment.config import DQNConfig, GroupConfig, ModelConfig, SharingConfig
from relayrl.experiment.layout import AgentLayout
from relayrl.experiment.profiler import SectionTimer
from relayrl.experiment.team_window import TeamWindow
from relayrl.replay import FieldSpec, ReplayPlan, row_nbytes
from relayrl.sharing.relay import Relay
from relayrl.sharing.selectors import make_selector

NetworkFactory = Callable[[int, tuple[int, ...], int], torch.nn.Module]


def team_settings(role: str, dqn: DQNConfig, sharing: SharingConfig) -> tuple[DQNConfig, SharingConfig]:
    """The learner and sharing settings a role trains with: ``ddqn`` opponents are independent
    dueling double DQN with PER (paper 000, appendix C.3), whatever the main team runs."""
    if role == "main":
        return dqn, sharing
    independent = dqn.model_copy(update={"double_q": True, "dueling": True, "prioritized": True, "param_sharing": False})
    return independent, SharingConfig(select="none")


def _action_dtype(spec: GroupSpec) -> np.dtype:
    return np.dtype(np.uint8 if spec.n_actions <= 256 else np.int64)


class Team:
    """An agent group ``[E, N, ...]`` driven by one batched learner."""

    def __init__(
        self,
        spec: GroupSpec,
        index: int,
        group: GroupConfig,
        dqn: DQNConfig,
        model: ModelConfig,
        sharing: SharingConfig,
        device: torch.device,
        run_seed: int,
        timer: SectionTimer,
        network_factory: NetworkFactory | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.role = group.role
        self.learns = group.role != "frozen"
        self.frozen_epsilon = group.epsilon
        self.dqn, self.sharing = team_settings(group.role, dqn, sharing)
        self.timer = timer
        self.layout = AgentLayout(spec.n_agents, self.dqn.param_sharing)
        # the first team keeps the single-team stream, so one-team runs reproduce exactly
        seeds = derive_seeds(run_seed, 4, "trainer" if index == 0 else f"trainer/{spec.name}")
        d = self.dqn
        settings = DQNSettings(d.lr, d.adam_eps, d.double_q, d.dueling, d.grad_clip, d.huber_delta)
        self.learner = DQNLearner(
            self.layout.n_sets,
            spec.obs_shape,
            spec.n_actions,
            settings,
            model.model_dump(),
            device,
            seeds[0],
            network_factory=network_factory,
        )
        self.action_dtype = _action_dtype(spec)
        self.window = TeamWindow()
        self.sharing_on = self.learns and self.sharing.select != "none"
        if not self.learns:
            return
        plan = self.replay_plan(spec, group, dqn, sharing)
        assert plan is not None
        self.bytes_per_transition = row_nbytes(plan.fields)
        self.replay = plan.build(alpha=d.alpha, beta=d.beta, eps=d.priority_eps, seed=seeds[1])
        self.batch_size = d.batch_size * (spec.n_agents if d.param_sharing else 1)
        s = self.sharing
        if s.team is not None and any(not 0 <= i < spec.n_agents for i in s.team):
            raise ConfigError(f"sharing.team indices must be in [0, {spec.n_agents}) for team {spec.name!r}, got {s.team}")
        self.selector = make_selector(
            s.select,
            spec.n_agents,
            bandwidth=s.bandwidth,
            window=s.window,
            gaussian_scale=s.gaussian_scale,
            running_moments=s.running_moments,
            stochastic_alpha=s.stochastic_alpha,
            stochastic_normaliser=s.stochastic_normaliser,
            seed=seeds[2],
        )
        self.relay = Relay(spec.n_agents, s.team)
        self.nstep = NStepBuilder(d.n_step, d.gamma, d.time_limit_as_terminal)

    @staticmethod
    def replay_plan(spec: GroupSpec, group: GroupConfig, dqn: DQNConfig, sharing: SharingConfig) -> ReplayPlan | None:
        """The replay this team allocates (None for a frozen team: it stores nothing)."""
        if group.role == "frozen":
            return None
        d, _ = team_settings(group.role, dqn, sharing)
        fields = {
            "obs": FieldSpec(spec.obs_shape, spec.obs_dtype),
            "action": FieldSpec((), _action_dtype(spec)),
            "reward": FieldSpec((), np.float32),
            "next_obs": FieldSpec(spec.obs_shape, spec.obs_dtype),
            "discount": FieldSpec((), np.float32),
        }
        return ReplayPlan(AgentLayout(spec.n_agents, d.param_sharing).n_sets, d.buffer_size, fields, d.prioritized)

    # ------------------------------------------------------------------ acting
    def epsilon(self, env_steps: int) -> float:
        d = self.dqn
        return linear_schedule(d.epsilon_start, d.epsilon_end, d.epsilon_steps, env_steps)

    def act(self, obs: np.ndarray, env_steps: int | None) -> np.ndarray:
        """``obs [E, N, ...]`` -> actions ``[E, N]``: epsilon-greedy on the schedule at
        ``env_steps``, greedy for ``None`` (evaluation); frozen teams use their own epsilon."""
        eps = 0.0 if env_steps is None else self.epsilon(env_steps)
        eps = eps if self.learns else self.frozen_epsilon
        actions = self.learner.act(self.layout.to_sets(obs, 1), eps)
        return self.layout.to_entities(actions, (obs.shape[0],))

    # ------------------------------------------------------------------ learning
    def store(self, steps: dict[str, np.ndarray]) -> int:
        """SUPER steps 1-2 for this team: own transitions into own replays, then |td| of the
        new ones with each sender's current networks, selection and relay. ``steps[f]`` is
        ``[T, E, N, ...]``. Returns the number of agent steps (alive agents) in the fragment."""
        with self.timer("replay add"):
            rows, mask = self._to_replay_rows(self.nstep.add(steps))
            if mask.any():
                self.replay.add(rows, mask=mask)
        if self.sharing_on and mask.any():
            with self.timer("td + relay"):
                self._relay(rows, mask)
        return int(steps["valid"].sum())

    def _to_replay_rows(self, t: Transitions) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``[T, E, N, ...]`` transitions -> per-set rows ``[P, M, ...]`` and mask ``[P, M]``."""
        data = {
            "obs": t.obs,
            "action": t.action.astype(self.action_dtype),
            "reward": t.reward,
            "next_obs": t.next_obs,
            "discount": t.discount,
        }
        rows = {k: self.layout.to_sets(v.reshape(-1, *v.shape[2:]), 1) for k, v in data.items()}
        mask = self.layout.to_sets(t.valid.reshape(-1, t.valid.shape[2]), 1)
        return rows, mask

    def _relay(self, rows: dict[str, np.ndarray], mask: np.ndarray) -> None:
        td_abs = np.abs(self.learner.td_error(rows))
        selected = self.selector.select(td_abs, mask)
        receive = self.relay.route(selected, mask, self.bytes_per_transition)
        if not receive.any():
            return
        n, m = mask.shape
        shared = {k: v.reshape(n * m, *v.shape[2:]) for k, v in rows.items()}
        priorities = None
        if self.sharing.priority == "sender_td":
            priorities = np.broadcast_to(td_abs.reshape(1, n * m), receive.shape)
        self.replay.add(shared, mask=receive, priorities=priorities)

    def train(self, n_updates: int) -> None:
        """SUPER step 3: ``n_updates`` gradient steps of every agent on its own replay."""
        for _ in range(n_updates):
            with self.timer("sample"):
                batch = self.replay.sample(self.batch_size)
            with self.timer("update"):
                td, metrics = self.learner.update(batch.data, batch.weights)
            if not (math.isfinite(metrics["td_loss"]) and math.isfinite(metrics["grad_norm"])):
                self._diverged(td)
            if self.dqn.prioritized:
                with self.timer("sample"):
                    self.replay.update_priorities(batch.indices, np.abs(td))
            self.window.updates += 1
            self.window.loss_sum += metrics["td_loss"]
            self.window.grad_norm_sum += metrics["grad_norm"]

    def _diverged(self, td: np.ndarray) -> None:
        """Names the agents whose update went non-finite (before their priorities are written)."""
        if self.dqn.param_sharing:
            who = f"the shared network of team {self.name!r}"
        else:
            bad = np.flatnonzero(~np.isfinite(td).all(axis=1))
            agents = [self.spec.agent_ids[i] for i in bad] or list(self.spec.agent_ids)
            who = f"agent(s) {', '.join(agents)} of team {self.name!r}"
        raise NonFiniteError(f"the TD loss or gradient of {who} is not finite")

    def sync_target(self) -> None:
        self.learner.sync_target()

    def drain_window(self) -> TeamWindow:
        window, self.window = self.window, TeamWindow()
        return window

    # ------------------------------------------------------------------ state
    def policy_state(self) -> dict[str, Any]:
        """The online networks alone (what a frozen opponent or an evaluation needs)."""
        return {"online": self.learner.online.state_dict(), "param_sharing": self.dqn.param_sharing}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        if state["param_sharing"] != self.dqn.param_sharing:
            raise CheckpointError(f"{source}: team {self.name!r} was trained with param_sharing={state['param_sharing']}")
        try:
            self.learner.online.load_state_dict(state["online"])
        except RuntimeError as error:
            raise CheckpointError(f"{source}: team {self.name!r}'s networks do not fit this run's model ({error})") from None
        self.learner.sync_target()

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"learner": self.learner.state_dict()}
        if self.learns:
            state.update(
                replay=self.replay.state_dict(),
                selector=self.selector.state_dict(),
                relay=self.relay.stats,
                nstep=self.nstep.state_dict(),
                window=self.window,
            )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state["learner"])
        if self.learns:
            self.replay.load_state_dict(state["replay"])
            self.selector.load_state_dict(state["selector"])
            self.relay.stats = state["relay"]
            self.nstep.load_state_dict(state["nstep"])
            self.window = state.get("window", TeamWindow())
