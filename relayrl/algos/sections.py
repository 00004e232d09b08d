"""The learner config sections (``dqn``, ``actor_critic``, ``qmix``): hyperparameters
with their paper sources, validated without importing the networks (so that ``relayrl
show`` and config checks stay light). Each family's code is in its own module."""

import warnings
from typing import Annotated, Literal

from pydantic import Field, model_validator

from relayrl.algos.algorithm import OffPolicyParams, OnPolicyParams, algo_key, base_algorithm
from relayrl.core.errors import RelayRLWarning
from relayrl.core.strict import PositiveInt, Strict


def with_algo_defaults(
    section: type[Strict], name: str, data: object, default_algo: str, defaults: dict[str, dict[str, object]], only: dict[str, tuple[str, ...]]
) -> object:
    """The section's raw keys over its algorithm's defaults, after refusing a key set away
    from its default that the algorithm would ignore (``only``: key -> the algorithms that
    read it), so that a setting never silently does nothing. A run's saved config, which
    holds every key, passes: the keys its algorithm ignores keep their defaults there."""
    if not isinstance(data, dict):
        return data
    algo = str(data.get("algo", default_algo))
    base = base_algorithm(algo)  # an entry registered under another name takes its base's defaults
    for key, algos in only.items():
        if key in data and base not in algos and data[key] != section.model_fields[key].default:
            readers = " and ".join(algos)
            raise ValueError(f"{key} is read by {readers} only, not by algo={algo}: remove {name}.{key}, or set {name}.algo to {algos[0]}")
    return {**defaults.get(base, {}), **data}


# The keys one kind of learner of a section reads and the others would ignore (each
# section's ``with_algo_defaults``; the centralised one is CENTRALISED_ONLY).
TD3_ONLY: dict[str, tuple[str, ...]] = {key: ("td3",) for key in ("policy_noise", "noise_clip", "policy_delay")}
SEAC_ONLY: dict[str, tuple[str, ...]] = {"seac_coef": ("seac",)}


class DQNConfig(Strict):
    """DQN-family hyperparameters; defaults are the SUPER paper's Pursuit column (Table 2,
    SPEC §1.1). Step counts are env steps summed over env copies. ``algo``: an algorithm
    registered with this section (``dqn``, or a user's)."""

    algo: Annotated[str, algo_key("dqn")] = "dqn"
    lr: float = Field(1.6e-4, gt=0)
    adam_eps: float = Field(1e-8, gt=0, description="RLlib's default")
    batch_size: int = Field(32, ge=1, description="per agent; parameter sharing uses N x this")
    buffer_size: int = Field(120_000, ge=1, description="per agent")
    gamma: float = Field(0.99, ge=0, le=1)
    double_q: bool = True
    dueling: bool = True
    prioritized: bool = True
    alpha: float = Field(0.6, ge=0)
    beta: float = Field(0.4, ge=0)
    priority_eps: float = Field(1e-6, gt=0)
    new_priority: Literal["max", "td", "one"] = Field(
        "max", description="a new transition's priority: max, the replay's largest (Schaul et al. 2016); td, its own |TD error| from the current "
        "networks (RLlib's worker_side_prioritization, which the SUPER reference code sets in Battle and Adversarial-Pursuit); one, a |TD error| "
        "of 1 (RLlib without it: the reference's Pursuit runs)"
    )
    n_step: int = Field(1, ge=1)
    target_update_interval: int = Field(1000, ge=1)
    fragment_length: int = Field(4, ge=1, description="env steps per update per agent")
    learning_starts: int = Field(1000, ge=0)
    epsilon_start: float = Field(0.1, ge=0, le=1)
    epsilon_end: float = Field(0.001, ge=0, le=1)
    epsilon_steps: int = Field(100_000, ge=0)
    grad_clip: float = Field(40.0, gt=0, description="per agent, each agent's own norm")
    huber_delta: float = Field(1.0, gt=0, description="RLlib's huber loss")
    param_sharing: bool = False
    time_limit_as_terminal: bool = False

    @model_validator(mode="after")
    def _batch_fits(self) -> "DQNConfig":
        if self.batch_size > self.buffer_size:
            raise ValueError(f"batch_size {self.batch_size} is larger than buffer_size {self.buffer_size}: lower dqn.batch_size")
        if self.new_priority != "max" and not self.prioritized:
            raise ValueError(f"dqn.new_priority={self.new_priority} sets the priority of new transitions in a prioritized replay: set dqn.prioritized=true, or remove it")
        return self

    def learner_params(self) -> OffPolicyParams:
        return OffPolicyParams(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            gamma=self.gamma,
            fragment_length=self.fragment_length,
            learning_starts=self.learning_starts,
            target_update_interval=self.target_update_interval,
            n_step=self.n_step,
            time_limit_as_terminal=self.time_limit_as_terminal,
            param_sharing=self.param_sharing,
            prioritized=self.prioritized,
            alpha=self.alpha,
            beta=self.beta,
            priority_eps=self.priority_eps,
            new_priority=self.new_priority,
        )


class ActorCriticConfig(Strict):
    """Deterministic actor-critic learners for continuous actions (paper 001, appendix C.4,
    Tables 1-2; SPEC §1.2). Defaults are TD3's column; presets set DDPG's and SAC's.

    ``td3``: twin critics, target policy smoothing, delayed actor (Fujimoto et al. 2018).
    ``ddpg``: one critic, actor every step, critic L2 penalty (Lillicrap et al. 2016, with
    paper 001's batch 256 and Gaussian exploration). ``sac``: SAC with a deterministic actor
    (Haarnoja et al. 2018, section 5.2's deterministic variant: state-value network with a
    soft target, twin critics, no entropy term) plus Gaussian exploration noise.
    Noise stds are in units of the action range's half-width.
    """

    algo: Annotated[str, algo_key("actor_critic")] = "td3"
    actor_lr: float = Field(3e-4, gt=0)
    critic_lr: float = Field(3e-4, gt=0)
    critic_weight_decay: float = Field(0.0, ge=0, description="L2 penalty coefficient on the critic's weights")
    hidden: list[PositiveInt] = Field([256, 256], min_length=1)
    tau: float = Field(0.005, gt=0, le=1)
    gamma: float = Field(0.99, ge=0, le=1)
    batch_size: int = Field(256, ge=1, description="per agent")
    buffer_size: int = Field(100_000, ge=1, description="the shared replay's capacity, or each agent's own")
    random_steps: int = Field(25_000, ge=0, description="env steps of uniformly random actions before learning")
    exploration_noise: float = Field(0.1, ge=0)
    policy_noise: float = Field(0.2, ge=0, description="td3: target policy smoothing std")
    noise_clip: float = Field(0.5, ge=0)
    policy_delay: int = Field(2, ge=1, description="critic updates per actor and target update")
    reward_scale: float = Field(1.0, gt=0)
    updates_per_step: int = Field(1, ge=1, description="gradient steps per agent per env step")
    normalize_obs: bool = Field(False, description="running mean/std normalisation of observations (ddpg, Table 2)")

    @model_validator(mode="before")
    @classmethod
    def _algo_keys(cls, data: object) -> object:
        return with_algo_defaults(cls, "actor_critic", data, "td3", {}, TD3_ONLY)

    @model_validator(mode="after")
    def _batch_fits(self) -> "ActorCriticConfig":
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"batch_size {self.batch_size} is larger than buffer_size {self.buffer_size}: lower actor_critic.batch_size"
            )
        return self

    def learner_params(self) -> OffPolicyParams:
        """Paper 001, C.2: one update per agent after each env step, after ``random_steps``
        of uniformly random actions; targets follow by soft updates."""
        return OffPolicyParams(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            gamma=self.gamma,
            fragment_length=1,
            learning_starts=self.random_steps,
            target_update_interval=None,
            random_steps=self.random_steps,
            updates_per_fragment=self.updates_per_step,
        )


class ValueDecompositionConfig(Strict):
    """Defaults: paper 002's Table III (punishment -1.5: batch 128 episodes, replay 10,000
    episodes) and SPEC §1.3 (Adam 1e-3, TD(lambda) 0.6, target update every 200 episodes,
    epsilon 0.995 -> 0.05 over 100k env steps). Batch and replay count whole episodes,
    as the pymarl-based reference counts them."""

    algo: Annotated[str, algo_key("qmix")] = "qmix"
    mixer: Literal["qmix", "vdn", "none"] = Field("qmix", description="none: independent Q-learning")
    weighting: Literal["none", "macpo"] = Field("none", description="macpo: Lemma 1's weights (paper 002)")
    sampler: Literal["uniform", "prioritized", "reuse"] = Field(
        "uniform", description="prioritized: PER over episodes by their weight; reuse: AccMER's priority-guided reuse (paper 002, Alg. 1)"
    )
    priority_alpha: float = Field(0.6, ge=0, description="prioritized: Schaul et al. 2016's alpha")
    priority_beta: float = Field(0.4, ge=0, description="prioritized: importance-sampling exponent")
    reuse_ratio: float = Field(0.5, ge=0, le=1, description="alpha: the share of each batch reused")
    reuse_decay: float = Field(1.0, gt=0, le=1, description="gamma of Alg. 1: the weight table's decay per update")
    reuse_period: int | None = Field(None, ge=1, description="updates between reuse-set refreshes; default floor(d / b)")
    storage: Literal["episodes", "transitions"] = Field(
        "episodes", description="replay rows: whole episodes, or transitions that spans are gathered from (needs sequence_length)"
    )
    batch_size: int = Field(128, ge=1, description="episodes (or spans) per update")
    buffer_size: int = Field(10_000, ge=1, description="replay rows: episodes, or transitions with storage=transitions")
    max_episode_length: int = Field(200, ge=1, description="the env's episode limit (steps of a stored episode)")
    lr: float = Field(1e-3, gt=0)
    gamma: float = Field(0.99, ge=0, le=1)
    td_lambda: float = Field(0.6, ge=0, le=1)
    double_q: bool = True
    target_update_episodes: int = Field(200, ge=1)
    updates_per_episode: float = Field(1.0, gt=0, description="gradient steps per finished episode (paper 003's epochs)")
    fragment_length: int = Field(8, ge=1, description="env steps the rollout collects between learner calls")
    epsilon_start: float = Field(0.995, ge=0, le=1)
    epsilon_end: float = Field(0.05, ge=0, le=1)
    epsilon_steps: int = Field(100_000, ge=0)
    hidden: int = Field(64, ge=1, description="GRU units")
    mixer_embed: int = Field(32, ge=1)
    hypernet_hidden: int = Field(64, ge=1)
    central_hidden: int = Field(256, ge=1, description="MAC-PO's central Q* network")
    bootstrap: Literal["own", "central"] = Field(
        "own", description="Q_tot's targets from its own target mixer, or (central) from the target Q* as weighted QMIX's (needs weighting=macpo)"
    )
    grad_clip: float = Field(10.0, gt=0)
    param_sharing: bool = True
    sequence_length: int | None = Field(None, ge=1, description="train on spans of this many steps instead of whole episodes")
    burn_in: int = Field(0, ge=0, description="steps before a span that warm its hidden state, without gradient")
    tbptt: int | None = Field(None, ge=1, description="backpropagate through at most this many steps (None: the whole span)")
    agent_id: bool = Field(True, description="agents see a one-hot of their index (with param_sharing)")
    last_action: bool = Field(True, description="agents see a one-hot of their previous action")

    @model_validator(mode="after")
    def _consistent(self) -> "ValueDecompositionConfig":
        if self.batch_size > self.buffer_size:
            raise ValueError(f"batch_size {self.batch_size} is larger than buffer_size {self.buffer_size} (both in episodes): lower qmix.batch_size")
        if self.burn_in and self.sequence_length is None:
            raise ValueError("burn_in warms the hidden state before a span: set qmix.sequence_length too")
        if self.storage == "transitions" and self.sequence_length is None:
            raise ValueError("storage=transitions trains on spans gathered from transitions: set qmix.sequence_length")
        if self.bootstrap == "central" and self.weighting != "macpo":
            raise ValueError("bootstrap=central takes Q_tot's targets from the central Q*, which only weighting=macpo trains: set weighting=macpo")
        if self.weighting == "macpo" and self.mixer == "none":
            raise ValueError("weighting=macpo weighs the mixed Q_tot (Lemma 1 is over the joint action): set mixer=qmix or vdn")
        return self

    def learner_params(self) -> OffPolicyParams:
        """The off-policy parameters other code reads (batch and replay in episodes; targets sync
        by episodes, so no env-step interval)."""
        return OffPolicyParams(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            gamma=self.gamma,
            fragment_length=self.fragment_length,
            learning_starts=0,
            target_update_interval=None,
            param_sharing=self.param_sharing,
        )


# What ``on_policy.algo`` changes in the section's defaults (a key the config gives wins): A2C
# and SEAC as Christianos et al. 2020 train them (their public code: 5-step returns, Adam
# 3e-4 with eps 1e-3, gradient norm 0.5, a network per agent), PPO as Yu et al. 2022 (MAPPO,
# appendix: GAE 0.95, clip 0.2, gradient norm 10, Adam 7e-4 with eps 1e-5, value
# normalisation). ``mappo`` and ``ppo`` differ only in what the critic sees.
ALGO_DEFAULTS: dict[str, dict[str, object]] = {
    "ppo": {},
    "mappo": {"critic_input": "state"},
    "a2c": {
        "rollout_length": 5, "epochs": 1, "minibatches": 1, "lr": 3e-4, "adam_eps": 1e-3, "gae_lambda": 1.0, "value_coef": 0.5,
        "clip": None, "value_clip": None, "value_loss": "mse", "max_grad_norm": 0.5,
        "normalize_advantages": False, "normalize_values": False, "param_sharing": False,
    },
}
ALGO_DEFAULTS["seac"] = ALGO_DEFAULTS["a2c"]


class OnPolicyConfig(Strict):
    """Policy-gradient learners on rollouts (``relayrl.algos.on_policy``): ``ppo`` (IPPO:
    each agent's critic sees its own observation), ``mappo`` (a critic on the env's state,
    the agents' joint observations or an agent-specific state), ``a2c`` (IA2C) and ``seac``
    (A2C plus the other agents' steps weighted by importance, Christianos et al. 2020).
    Defaults are PPO's; ``algo`` changes them to its own (``ALGO_DEFAULTS``) where the config
    does not set them. Steps are per env copy."""

    algo: Annotated[str, algo_key("on_policy")] = "ppo"
    rollout_length: int = Field(128, ge=1, description="steps of every env copy per rollout (one update each)")
    epochs: int = Field(10, ge=1, description="passes over the rollout per update")
    minibatches: int = Field(1, ge=1, description="minibatches per pass")
    minibatch_unit: Literal["agent", "env_step"] = Field(
        "agent",
        description="agent: minibatches draw each agent's steps (recurrent: chunks) on their own, as JaxMARL and the MAPPO paper's code do; "
        "env_step: whole env steps (recurrent: whole env copies' chunks), as BenchMARL does, so that a critic on the state computes one value per env step in training too",
    )
    lr: float = Field(7e-4, gt=0)
    adam_eps: float = Field(1e-5, gt=0)
    lr_anneal: bool = Field(False, description="the learning rate falls linearly to 0 at total_steps")
    gamma: float = Field(0.99, ge=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1, description="1: n-step returns to the rollout's end")
    clip: float | None = Field(0.2, gt=0, description="PPO's ratio clip; None: the plain policy gradient (A2C)")
    value_clip: float | None = Field(0.2, gt=0, description="the value's change clipped around the rollout's values; None: unclipped")
    value_loss: Literal["mse", "huber"] = "huber"
    huber_delta: float = Field(10.0, gt=0)
    value_coef: float = Field(1.0, ge=0, description="weight of the value loss beside the policy's")
    entropy_coef: float = Field(0.01, ge=0)
    max_grad_norm: float = Field(10.0, gt=0, description="each parameter set's gradient norm, actor and critic together")
    normalize_advantages: bool = True
    normalize_values: bool = Field(True, description="the critic learns returns scaled by their running mean and variance")
    torso: Literal["flat", "nature_cnn"] = Field(
        "flat", description="flat: the MLPs read the flattened observation; nature_cnn: screens H x W x C through Mnih et al.'s convolutions, one torso for actor and critic"
    )
    hidden: list[PositiveInt] = Field([64, 64], description="the actor's and the critic's hidden layers (after the torso)")
    activation: Literal["relu", "tanh"] = "relu"
    recurrent: bool = Field(False, description="a GRU after the MLP in the actor and the critic, its memory carried through each episode")
    chunk_length: int = Field(10, ge=1, description="recurrent: training unrolls chunks of this many steps from the hidden states they began with")
    param_sharing: bool = Field(True, description="one parameter set for the group's agents, which see their one-hot index")
    agent_id: bool = Field(True, description="with param_sharing: the agents' one-hot index in their inputs")
    critic_input: Literal["obs", "state", "joint_obs", "agent_state"] = Field(
        "obs", description="state: the env's global state; joint_obs: all agents' observations; agent_state: the state with the agent's own observation and index"
    )
    action_bounds: Literal["squash", "clip"] = Field(
        "squash", description="Box actions: tanh-squashed Gaussian, or a Gaussian clipped to the bounds (its probability at a bound is the tail's)"
    )
    log_std_init: float = Field(-0.5, description="Box actions: the state-independent log std at the start")
    seac_coef: float = Field(1.0, ge=0, description="seac: lambda, the weight of the other agents' steps")
    time_limit_as_terminal: bool = Field(False, description="a truncated episode's return ends there instead of bootstrapping")

    @model_validator(mode="before")
    @classmethod
    def _algo_defaults(cls, data: object) -> object:
        return with_algo_defaults(cls, "on_policy", data, "ppo", ALGO_DEFAULTS, SEAC_ONLY)

    @model_validator(mode="after")
    def _consistent(self) -> "OnPolicyConfig":
        if base_algorithm(self.algo) == "seac" and self.param_sharing:
            raise ValueError("seac weighs other agents' steps by pi_i / pi_k, which is 1 for agents that share parameters: set on_policy.param_sharing=false")
        if self.recurrent and self.rollout_length % self.chunk_length:
            fits = max(k for k in range(1, self.chunk_length + 1) if self.rollout_length % k == 0)
            raise ValueError(f"on_policy.rollout_length={self.rollout_length} is not a multiple of chunk_length={self.chunk_length}: the rollout is cut "
                             f"into chunks; set on_policy.chunk_length to a divisor of {self.rollout_length} (e.g. {fits}), or change rollout_length")
        if not self.recurrent and self.chunk_length != type(self).model_fields["chunk_length"].default:
            raise ValueError("on_policy.chunk_length is read by recurrent policies only: set on_policy.recurrent=true, or remove chunk_length")
        if base_algorithm(self.algo) == "seac" and self.recurrent:
            raise ValueError("seac's agents learn from other agents' single steps: set on_policy.recurrent=false")
        if base_algorithm(self.algo) == "seac" and self.minibatches != 1:
            raise ValueError("seac adds the other agents' steps of the whole rollout to each update: set on_policy.minibatches=1")
        if self.torso == "nature_cnn" and self.critic_input != "obs":
            raise ValueError(f"on_policy.torso=nature_cnn feeds the actor's screens to the critic too: set on_policy.critic_input=obs (not {self.critic_input})")
        if self.torso == "flat" and not self.hidden:
            raise ValueError("on_policy.hidden is empty: give the MLPs at least one layer, e.g. [64, 64]")
        if base_algorithm(self.algo) != "mappo" and self.critic_input != "obs":
            raise ValueError(f"on_policy.critic_input={self.critic_input} is a centralised critic: set on_policy.algo=mappo")
        return self

    def learner_params(self) -> OnPolicyParams:
        return OnPolicyParams(param_sharing=self.param_sharing)


# What ``centralised.algo`` changes in the section's defaults (a key the config gives wins).
# The section's defaults are HARL's MADDPG on MPE (Zhong et al. 2024, its public configs:
# Adam 5e-4 / 1e-3, 128-128 ReLU, tau 0.005, batch 1000 of a 1M replay, 10,000 random
# steps, then 50 updates per 1,000 env steps, exploration noise 0.1); MATD3 adds TD3's
# smoothing and delay (0.2, 0.5, 2); MASAC takes HARL's tuned HASAC for MPE (Adam 5e-4 for
# both, 256-256, the temperature from 1 with Adam 3e-4; its 20-step returns are a preset's
# choice here).
CENTRALISED_DEFAULTS: dict[str, dict[str, object]] = {
    "maddpg": {},
    "matd3": {"policy_noise": 0.2, "noise_clip": 0.5, "policy_delay": 2},
    "masac": {"critic_lr": 5e-4, "hidden": [256, 256], "initial_alpha": 1.0},
}

# The keys one kind of centralised learner reads and the others would ignore.
CENTRALISED_ONLY: dict[str, tuple[str, ...]] = {
    **{key: ("masac",) for key in ("alpha_lr", "initial_alpha", "auto_alpha", "target_entropy_scale")},
    **{key: ("matd3",) for key in ("policy_noise", "noise_clip", "policy_delay")},
    **{key: ("maddpg", "matd3") for key in ("exploration_noise", "gumbel_temperature", "logits_penalty")},
}


class CentralisedConfig(Strict):
    """Actor-critics with centralised critics (``relayrl.algos.centralised``): ``maddpg``
    (Lowe et al. 2017), ``matd3`` (twin critics, target smoothing, delayed actor) and
    ``masac`` (soft actor-critic with a learnt temperature). Each agent's critic sees every
    agent's observation and action; each actor acts on its agent's own observation. Box or
    discrete actions (straight-through Gumbel-softmax). Batch and replay count joint rows
    (one env step of one copy, every agent's step in it); steps are env steps over the copies."""

    algo: Annotated[str, algo_key("centralised")] = "maddpg"
    actor_lr: float = Field(5e-4, gt=0)
    critic_lr: float = Field(1e-3, gt=0)
    alpha_lr: float = Field(3e-4, gt=0, description="masac: the temperature's")
    hidden: list[PositiveInt] = Field([128, 128], min_length=1)
    tau: float = Field(0.005, gt=0, le=1)
    gamma: float = Field(0.99, ge=0, le=1)
    batch_size: int = Field(1000, ge=1, description="joint rows per update")
    buffer_size: int = Field(1_000_000, ge=1, description="joint rows")
    random_steps: int = Field(10_000, ge=0, description="env steps of uniformly random actions before learning")
    fragment_length: int = Field(1000, ge=1, description="env steps (over the copies) per update round")
    updates_per_fragment: int = Field(50, ge=1, description="gradient steps per update round")
    n_step: int = Field(1, ge=1)
    exploration_noise: float = Field(0.1, ge=0, description="maddpg, matd3 with Box actions: Gaussian noise std in half-ranges")
    policy_noise: float = Field(0.0, ge=0, description="matd3: target smoothing std in half-ranges")
    noise_clip: float = Field(0.0, ge=0)
    policy_delay: int = Field(1, ge=1, description="critic steps per actor and target step")
    gumbel_temperature: float = Field(1.0, gt=0, description="discrete actions: the relaxed sample's temperature")
    logits_penalty: float = Field(1e-3, ge=0, description="discrete maddpg: weight of the actor's mean squared logits")
    initial_alpha: float = Field(0.2, gt=0, description="masac: the temperature at the start")
    auto_alpha: bool = Field(True, description="masac: learn the temperature toward the target entropy")
    target_entropy_scale: float = Field(0.98, gt=0, description="masac, discrete: the target entropy is this x log |A|")
    max_grad_norm: float | None = Field(10.0, gt=0, description="each parameter set's gradient norm (EPyMARL's 10); null: no clipping, as HARL's and the AI Arena's code")
    param_sharing: bool = Field(False, description="one actor for the group's agents (critics stay one per agent)")
    critic: Literal["joint", "own", "common"] = Field(
        "joint", description="joint: each agent's critic sees every agent's observation and action; own: its agent's only (independent learners); "
        "common: one critic for the team on every observation and action, learning the summed reward; each actor is stepped through it with "
        "the other agents' replayed actions in maddpg and matd3 (HARL's code), with every agent's current action in masac (the AI Arena's code)"
    )
    time_limit_as_terminal: bool = False

    @model_validator(mode="before")
    @classmethod
    def _algo_defaults(cls, data: object) -> object:
        return with_algo_defaults(cls, "centralised", data, "maddpg", CENTRALISED_DEFAULTS, CENTRALISED_ONLY)

    @model_validator(mode="after")
    def _batch_fits(self) -> "CentralisedConfig":
        if self.batch_size > self.buffer_size:
            raise ValueError(f"batch_size {self.batch_size} is larger than buffer_size {self.buffer_size}: lower centralised.batch_size")
        if not self.auto_alpha and self.alpha_lr != type(self).model_fields["alpha_lr"].default:
            raise ValueError("centralised.alpha_lr is the learnt temperature's, and auto_alpha=false fixes it at initial_alpha: remove alpha_lr, or set auto_alpha=true")
        return self

    @model_validator(mode="after")
    def _update_ratio(self) -> "CentralisedConfig":
        """More than one gradient step per env step is allowed (a high replay ratio) but said:
        shortening ``fragment_length`` alone multiplies the updates per env step."""
        ratio = self.updates_per_fragment / self.fragment_length
        if ratio > 1:
            fields = type(self).model_fields
            default = fields["updates_per_fragment"].default / fields["fragment_length"].default
            warnings.warn(
                f"centralised.updates_per_fragment={self.updates_per_fragment} gradient steps every fragment_length={self.fragment_length} env steps "
                f"make {ratio:g} updates of {self.batch_size} joint rows per env step ({ratio / default:,.0f}x the defaults' {default:g}), and training "
                f"will be mostly updates; to update more often at the same ratio, lower updates_per_fragment with fragment_length "
                f"(updates_per_fragment={max(1, round(default * self.fragment_length))} for fragment_length={self.fragment_length})",
                RelayRLWarning,
                stacklevel=2,
            )
        return self

    def learner_params(self) -> OffPolicyParams:
        return OffPolicyParams(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            gamma=self.gamma,
            fragment_length=self.fragment_length,
            learning_starts=self.random_steps,
            target_update_interval=None,
            n_step=self.n_step,
            time_limit_as_terminal=self.time_limit_as_terminal,
            random_steps=self.random_steps,
            updates_per_fragment=self.updates_per_fragment,
            param_sharing=self.param_sharing,
        )
