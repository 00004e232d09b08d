"""A team of K deterministic actor-critic agents (TD3, DDPG, deterministic SAC) on
continuous actions: DASE's learners (paper 001; SPEC §1.2).

Sharing is ``select`` x ``correction`` as for the DQN teams (DESIGN.md §1): with
``select: none`` each agent learns from its own replay; with ``select: all`` and
``replay: shared`` every transition goes into one replay of limited capacity, tagged with
the agent that collected it, and each agent's draw from it is corrected on the receiver's
side by ``correction`` (``dps``: Deterministic Policy Similarity weights; ``none``:
ES-DASE). All K agents act, store and update in batched calls.
"""

import math
from typing import Any

import numpy as np
import torch

from relayrl.algos.actor_critic import DeterministicActorLearner
from relayrl.algos.dase import DPSSettings, dase_update
from relayrl.algos.nstep import NStepBuilder
from relayrl.algos.sac_deterministic import DeterministicSACLearner, DeterministicSACSettings
from relayrl.algos.td3 import TD3Learner, TD3Settings
from relayrl.core.errors import ConfigError, NonFiniteError
from relayrl.core.seeding import derive_seeds
from relayrl.core.specs import GroupSpec
from relayrl.experiment.config import ActorCriticConfig, SharingConfig
from relayrl.experiment.layout import AgentLayout
from relayrl.experiment.profiler import SectionTimer
from relayrl.experiment.team_window import TeamWindow
from relayrl.replay import FieldSpec, ReplayPlan


def make_actor_critic(
    config: ActorCriticConfig, n_sets: int, spec: GroupSpec, device: torch.device, seed: int
) -> DeterministicActorLearner:
    """The learner of ``config.algo`` with the config's hyperparameters."""
    obs_dim = int(np.prod(spec.obs_shape))
    c = config
    if c.algo == "sac":
        settings = DeterministicSACSettings(c.critic_lr, tuple(c.hidden), c.tau, c.exploration_noise, c.reward_scale, c.normalize_obs)
        return DeterministicSACLearner(n_sets, obs_dim, spec.action_low, spec.action_high, settings, device, seed)
    td3 = c.algo == "td3"
    settings_td3 = TD3Settings(
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
    )
    return TD3Learner(n_sets, obs_dim, spec.action_low, spec.action_high, settings_td3, device, seed)


class ActorCriticTeam:
    """K agents ``[E, K, obs]`` -> actions ``[E, K, act]`` with one batched learner."""

    role = "main"
    learns = True
    sharing_on = False  # no sender-side relay: sharing happens through the replay

    def __init__(
        self,
        spec: GroupSpec,
        config: ActorCriticConfig,
        sharing: SharingConfig,
        device: torch.device,
        run_seed: int,
        timer: SectionTimer,
    ) -> None:
        if not spec.continuous:
            raise ConfigError(
                f"team {spec.name!r} has {spec.n_actions} discrete actions; actor_critic learners need continuous "
                f"(Box) actions: choose a continuous env (env.settings.env_id, e.g. Pendulum-v1 or HalfCheetah-v5)"
            )
        self.spec = spec
        self.name = spec.name
        self.config = config
        self.sharing = sharing
        self.timer = timer
        self.n_agents = spec.n_agents
        self.layout = AgentLayout(spec.n_agents, shared=False)
        seeds = derive_seeds(run_seed, 3, "trainer")
        self.learner = make_actor_critic(config, spec.n_agents, spec, device, seeds[0])
        self.shared_replay = sharing.replay == "shared"
        self.dps = DPSSettings(
            divergence=sharing.divergence if sharing.correction == "dps" else "none",
            reference_cov=sharing.reference_cov,
            sigma=config.exploration_noise,
            regulariser=sharing.cov_regulariser,
            jsd_samples=sharing.jsd_samples,
        )
        self.replay = self.replay_plan(spec, config, sharing).build(seed=seeds[1])
        self.dps_generator = torch.Generator(device=device).manual_seed(seeds[2])
        self.nstep = NStepBuilder(1, config.gamma)
        self.window = TeamWindow()

    @staticmethod
    def replay_plan(spec: GroupSpec, config: ActorCriticConfig, sharing: SharingConfig) -> ReplayPlan:
        """One replay per agent, or one shared replay whose rows name their collector."""
        fields = {
            "obs": FieldSpec(spec.obs_shape, np.float32),
            "action": FieldSpec(spec.action_shape, np.float32),
            "reward": FieldSpec((), np.float32),
            "next_obs": FieldSpec(spec.obs_shape, np.float32),
            "discount": FieldSpec((), np.float32),
        }
        shared = sharing.replay == "shared"
        if shared:
            fields["agent"] = FieldSpec((), np.int16)
        return ReplayPlan(1 if shared else spec.n_agents, config.buffer_size, fields)

    # ------------------------------------------------------------------ acting
    def act(self, obs: np.ndarray, env_steps: int | None) -> np.ndarray:
        """``obs [E, K, ...]`` -> ``[E, K, act]``: uniform random during the first
        ``random_steps`` env steps, then the actor plus Gaussian noise; ``env_steps=None``
        is evaluation (no noise)."""
        if env_steps is not None and env_steps < self.config.random_steps:
            return self.learner.random_actions(obs.shape[:2])
        sets = self.layout.to_sets(obs.reshape(*obs.shape[:2], -1), 1)
        actions = self.learner.act(sets, explore=env_steps is not None)
        return self.layout.to_entities(actions, obs.shape[:1])

    # ------------------------------------------------------------------ learning
    def store(self, steps: dict[str, np.ndarray]) -> int:
        """Own transitions into the agent's replay, or all into the shared one with the
        collecting agent's index. ``steps[f]`` is ``[T, E, K, ...]``."""
        with self.timer("replay add"):
            t = self.nstep.add(steps)
            data = {"obs": t.obs, "action": t.action, "reward": t.reward, "next_obs": t.next_obs, "discount": t.discount}
            data = {k: v.reshape(*v.shape[:3], -1) if k in ("obs", "next_obs") else v for k, v in data.items()}
            own_obs = self.layout.to_sets(data["obs"].reshape(-1, *data["obs"].shape[2:]), 1)
            own_valid = self.layout.to_sets(t.valid.reshape(-1, t.valid.shape[2]), 1)
            self.learner.observe(own_obs, own_valid)
            if self.shared_replay:
                rows = {k: v.reshape(1, -1, *v.shape[3:]) for k, v in data.items()}
                rows["agent"] = np.broadcast_to(np.arange(self.n_agents, dtype=np.int16), t.valid.shape).reshape(1, -1)
                mask = t.valid.reshape(1, -1)
            else:
                rows = {k: self.layout.to_sets(v.reshape(-1, *v.shape[2:]), 1) for k, v in data.items()}
                mask = own_valid
            if mask.any():
                self.replay.add(rows, mask=mask)
        return int(steps["valid"].sum())

    def train(self, n_updates: int) -> None:
        """``n_updates`` gradient steps of every agent: DASE's weighted step on the shared
        replay, or plain steps on each agent's own replay."""
        for _ in range(n_updates * self.config.updates_per_step):
            if self.shared_replay:
                with self.timer("update"):
                    metrics = dase_update(self.learner, self.replay, self.config.batch_size, self.dps, self.dps_generator)
            else:
                with self.timer("sample"):
                    batch = self.replay.sample(self.config.batch_size)
                with self.timer("update"):
                    metrics = self.learner.update(batch.data)
            if not all(math.isfinite(metrics[k]) for k in ("critic_loss", "actor_loss") if k in metrics):
                raise NonFiniteError(f"the critic or actor loss of team {self.name!r} is not finite")
            w = self.window
            w.updates += 1
            w.loss_sum += metrics["critic_loss"]
            for key in ("actor_loss", "dps_weight", "external_fraction"):
                if key in metrics:
                    w.add(key, metrics[key])

    def sync_target(self) -> None:
        """Targets follow by soft updates inside ``update``."""

    def drain_window(self) -> TeamWindow:
        window, self.window = self.window, TeamWindow()
        return window

    # ------------------------------------------------------------------ state
    def policy_state(self) -> dict[str, Any]:
        return {"actor": self.learner.policy_state(), "algo": self.config.algo}

    def load_policy_state(self, state: dict[str, Any], source: str) -> None:
        self.learner.load_policy_state(state["actor"])

    def state_dict(self) -> dict[str, Any]:
        return {
            "learner": self.learner.state_dict(),
            "replay": self.replay.state_dict(),
            "nstep": self.nstep.state_dict(),
            "dps_generator": self.dps_generator.get_state(),
            "window": self.window,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state["learner"])
        self.replay.load_state_dict(state["replay"])
        self.nstep.load_state_dict(state["nstep"])
        self.dps_generator.set_state(state["dps_generator"])
        self.window = state["window"]
