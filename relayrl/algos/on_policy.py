"""The on-policy learner: policy-gradient algorithms (``relayrl.algos.policy_gradient``,
``relayrl.algos.seac``) fed from rollouts (DESIGN.md §4).

``observe`` writes each fragment of its entities' steps ``[T, E, N, ...]`` into the rollout
storage ``[rollout_length, E, N, ...]``, with what the policy computed for those steps in
one batched pass before anything learns: the log-probabilities of the actions taken (the
networks that acted are the learner's own until its next update, with Ray runners too: they
take the networks after every update), the critic's values of the observations and of the
observations after each step. ``learn`` trains on every full rollout: GAE(lambda) advantages
and returns (``relayrl.algos.advantages``; a truncated episode bootstraps from its final
observation, a terminated one does not), ``epochs`` passes of ``minibatches`` shuffled
minibatches, one gradient step of every parameter set on each; then the storage starts
again. Entities out of their episode are masked out of every loss.

SEAC's sharing: after the advantages, each agent's selection (``sharing.select``: all, or
SUPER's rules on |advantage| at ``sharing.bandwidth``) picks the steps it offers, the relay
routes them to the other agents of the team and counts them, and every agent's update adds
the steps it received (``relayrl.algos.seac``).
"""

from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from relayrl.algos.advantages import gae
from relayrl.algos.algorithm import ALGORITHMS
from relayrl.algos.layout import AgentLayout
from relayrl.algos.learner import LearnerBase, MetricTally
from relayrl.core.errors import NonFiniteError
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.replay import FieldSpec, ReplayPlan
from relayrl.sharing.config import SharingConfig
from relayrl.sharing.relay import RelayStats
from relayrl.sharing.selectors import selection

# what a rollout keeps of a fragment's steps, besides what the policy computed for them
KEPT = ("obs", "action", "action_mask", "reward", "valid")
# what SEAC's agents read of each other's steps
SHARED = ("obs", "action", "action_mask", "critic_obs", "logp", "returns")


class OnPolicyLearner(LearnerBase):
    """A learning policy's rollout storage, advantages and updates for one group
    ``[E, N, ...]``: P parameter sets (N, or 1 with parameter sharing)."""

    def __init__(
        self,
        spec: GroupSpec,
        algo: str,
        config: Any,
        sharing: SharingConfig,
        device: torch.device,
        seeds: list[int],
        timer: SectionTimer,
        total_steps: int | None = None,
        **options: Any,
    ) -> None:
        """``config``: the ``on_policy`` section; ``seeds``: algorithm, minibatches, selection;
        ``total_steps``: where an annealed learning rate reaches 0."""
        params = config.learner_params()
        layout = AgentLayout(spec.n_agents, params.param_sharing)
        super().__init__(spec, algo, params, ALGORITHMS[algo].make(spec, config, layout.n_sets, device, seeds[0]), layout)
        self.config = config
        self.timer = timer
        self.total_steps = total_steps
        self.lr = config.lr
        self.rng = np.random.default_rng(seeds[1])  # minibatch order
        self.storage: dict[str, np.ndarray] = {}
        self.filled = 0  # steps of the rollout in storage
        self.ready: list[dict[str, np.ndarray]] = []  # full rollouts not learned from yet
        self.hidden: dict[str, np.ndarray] | None = None  # recurrent networks' memory per entity after the last step ``[W, N, H]``
        self.last_over: np.ndarray | None = None  # ``[W, N]``: the entity's episode ended with the last step
        self.shares = ALGORITHMS[algo].capabilities.select
        if self.shares:
            self.selector, self.relay = sharing.selection(spec.name, spec.n_agents, seeds[2])
        self.bytes_per_transition = int(np.prod(spec.obs_shape)) * np.dtype(spec.obs_dtype).itemsize + 16  # obs, action, log-prob, return
        self.tally = MetricTally()
        self.updates = 0  # gradient steps per parameter set
        self.rollouts = 0

    not_exchanged = "learns on-policy from its own rollouts"
    export_relay = outgoing = incoming = join_shared_replay = shared_rows = shared_size = LearnerBase._not_exchanged

    @property
    def metric_columns(self) -> tuple[str, ...]:
        return (*self.algorithm.metric_columns, "explained_variance")

    def first_update(self) -> str:
        return f"after each rollout of on_policy.rollout_length={self.config.rollout_length} steps of every env copy"

    def fragment_steps(self, num_envs: int) -> int:
        """One rollout per fragment, so every step is acted on by the networks it is learnt with."""
        return self.config.rollout_length

    # ------------------------------------------------------------------ experience
    def _steps(self, x: np.ndarray) -> np.ndarray:
        """``[T, W, N, ...]`` -> ``[P, T, B, ...]``: each set's rows, step by step."""
        return self.layout.to_sets(x, 2).reshape(self.layout.n_sets, x.shape[0], -1, *x.shape[3:])

    def _entities(self, y: np.ndarray) -> np.ndarray:
        """``[P, T, B, ...]`` -> ``[T, W, N, ...]``."""
        p, t = y.shape[:2]
        return self.layout.to_entities(y.reshape(p, -1, *y.shape[3:]), (t, -1)).reshape(t, -1, self.spec.n_agents, *y.shape[3:])

    def _agents(self, like: np.ndarray) -> np.ndarray:
        """Each entity's index, shaped as ``like [T, W, N]``."""
        return np.broadcast_to(np.arange(self.spec.n_agents), like.shape).copy()  # a view of one step would stay read-only

    def _behaviour(self, f: dict[str, np.ndarray], over: np.ndarray) -> dict[str, np.ndarray]:
        """What the networks that acted compute for a fragment's steps ``[T, W, N]`` in one
        pass: the actions' log-probabilities, the critic's inputs and outputs, the values of
        the observations and of those after each step (in the returns' units), and for
        recurrent networks the hidden states each step began with."""
        algorithm = self.algorithm
        # the critic's features may be a read-only broadcast of the state: made an array of their own
        critic_obs = np.require(algorithm.critic_features(f["obs"], f.get("state")), requirements=("C", "W"))
        rows = {"obs": f["obs"], "action": f["action"], "agent": self._agents(f["reward"]), "critic_obs": critic_obs,
                "next_critic_obs": np.require(algorithm.critic_features(f["next_obs"], f.get("next_state")), requirements=("C", "W"))}
        if "action_mask" in f:
            rows["action_mask"] = f["action_mask"]
        rows = {k: self._steps(v) for k, v in rows.items()}
        if algorithm.recurrent:
            if self.hidden is None:  # the first fragment: every entity at its episode's start
                width = self.algorithm.actor.hidden_size
                self.hidden = {name: np.zeros((*f["reward"].shape[1:], width), np.float32) for name in ("actor_h", "critic_h")}
                self.last_over = np.zeros(f["reward"].shape[1:], bool)
            rows["begins"] = self._steps(np.concatenate([self.last_over[None], over[:-1]]))
            rows.update({name: self.layout.to_sets(h, 1) for name, h in self.hidden.items()})
        computed = algorithm.behaviour(rows)
        values = {k: algorithm.to_returns(computed[k]).cpu().numpy() for k in ("scaled", "next_scaled")}
        steps = {
            "logp": self._entities(computed["logp"].cpu().numpy()),
            "critic_obs": critic_obs,
            "scaled_value": self._entities(computed["scaled"].cpu().numpy()),
            "value": self._entities(values["scaled"]),
            "next_value": self._entities(values["next_scaled"]),
        }
        if algorithm.recurrent:
            for name in ("actor_h", "critic_h"):
                steps[name] = self._entities(computed[name].cpu().numpy())
                last = computed[name.replace("_h", "_last")].cpu().numpy()
                self.hidden[name] = self.layout.to_entities(last, (last.shape[1] * last.shape[0] // self.spec.n_agents,))
            steps["begins"] = np.concatenate([self.last_over[None], over[:-1]])
            self.last_over = over[-1].copy()
        return steps

    def observe(self, fragment: dict[str, np.ndarray]) -> int:
        """Stores a fragment ``[T, W, N, ...]`` with its behaviour pass; a full rollout waits
        for ``learn`` (a fragment that runs past the rollout's end begins the next one)."""
        with self.timer("rollout"):
            f = fragment
            over = f["terminated"] | f["truncated"] | f["over"][:, :, None]
            steps = {k: f[k] for k in KEPT if k in f}
            ended = f["terminated"] | (f["truncated"] & self.config.time_limit_as_terminal)
            steps.update(self._behaviour(f, over), terminated=ended, over=over)
            length, start = f["reward"].shape[0], 0
            while start < length:
                take = min(length - start, self.config.rollout_length - self.filled)
                self._store({k: v[start : start + take] for k, v in steps.items()})
                start += take
        return int(f["valid"].sum())

    def _store(self, steps: dict[str, np.ndarray]) -> None:
        if not self.storage:
            t = self.config.rollout_length
            self.storage = {k: np.zeros((t, *v.shape[1:]), v.dtype) for k, v in steps.items()}
        n = len(steps["reward"])
        for key, value in steps.items():
            self.storage[key][self.filled : self.filled + n] = value
        self.filled += n
        if self.filled == self.config.rollout_length:
            self.ready.append(self.storage)
            self.storage, self.filled = {}, 0

    def copy_networks_from(self, other: LearnerBase) -> None:
        """Takes ``other``'s networks (population-based training) and drops the rollout in
        progress: its steps were taken and valued by the networks replaced, so PPO's ratio
        would be measured from another policy and the advantages from another critic. At
        most one rollout's steps are lost per copy."""
        super().copy_networks_from(other)
        self.storage, self.filled = {}, 0

    def end_workers(self, workers: np.ndarray) -> None:
        """The episodes in flight of ``workers`` end as truncations at the last step stored:
        their env copies were restarted elsewhere (a step learnt already needs nothing but
        a fresh memory)."""
        if self.filled:
            self.storage["over"][self.filled - 1, workers] = True
        if self.last_over is not None:
            self.last_over[workers] = True

    # ------------------------------------------------------------------ learning
    def learn(self, env_steps: int) -> None:
        """Trains on each full rollout (usually the one this fragment completed)."""
        while self.ready:
            rollout = self.ready.pop(0)
            if self.config.lr_anneal and self.total_steps:
                self._set_lr(self.lr * max(0.0, 1.0 - env_steps / self.total_steps))
            with self.timer("update"):
                self._train(rollout)
            self.rollouts += 1

    def _set_lr(self, lr: float) -> None:
        for optimizer in self.algorithm.optimizers():
            for group in optimizer.param_groups:
                group["lr"] = lr

    def hyperparameters(self) -> dict[str, float]:
        """As every learner's; with ``lr_anneal`` the ``lr`` is the one the schedule anneals
        from, not the optimiser's annealed value of the last update."""
        found = super().hyperparameters()
        if self.config.lr_anneal and self.total_steps:
            found["lr"] = self.lr
        return found

    def set_hyperparameters(self, values: dict[str, float]) -> None:
        """As every learner's; with ``lr_anneal`` a new ``lr`` is the one the next rollouts
        anneal from (a scheme's copy or perturbation of it is kept, not annealed away)."""
        if "lr" in values and self.config.lr_anneal and self.total_steps:
            self.lr = values["lr"]
            values = {key: value for key, value in values.items() if key != "lr"}
        super().set_hyperparameters(values)

    def _advantages(self, r: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """GAE(lambda) advantages and returns ``[T, W, N]`` of a rollout."""
        c = self.config
        tensors = [torch.as_tensor(r[k], dtype=torch.float64) for k in ("reward", "value", "next_value")]
        advantage, returns = gae(*tensors, torch.as_tensor(r["terminated"]), torch.as_tensor(r["over"]), c.gamma, c.gae_lambda)
        return advantage.numpy(), returns.numpy()

    def _chunks(self, x: np.ndarray) -> np.ndarray:
        """``[T, W, N, ...]`` -> chunks of ``chunk_length`` steps ``[P, L, C, ...]``."""
        length = self.config.chunk_length
        spans = x.reshape(-1, length, *x.shape[1:]).swapaxes(0, 1)  # [L, T / L, W, N, ...]
        return self.layout.to_sets(spans, 3).reshape(self.layout.n_sets, length, -1, *x.shape[3:])

    def _train(self, r: dict[str, np.ndarray]) -> None:
        """Advantages, then ``epochs`` passes of ``minibatches`` over the rollout's steps (or
        its chunks, for recurrent networks, each from the hidden states it began with)."""
        c, algorithm = self.config, self.algorithm
        advantage, returns = self._advantages(r)
        r = {**r, "advantage": advantage, "returns": returns.astype(np.float32), "agent": self._agents(r["reward"])}
        fields = ("obs", "agent", "action", "action_mask", "critic_obs", "logp", "scaled_value", "valid", "advantage", "returns")
        if algorithm.recurrent:
            batch = {k: self._chunks(r[k]) for k in (*fields, "begins") if k in r}
            batch["critic_begins"] = algorithm.critic_begins(torch.as_tensor(batch["begins"])).numpy()
            for name in ("begins", "critic_begins"):
                batch[name][:, 0] = False  # a chunk starts from the hidden state its first step began with
            for name in ("actor_h", "critic_h"):
                batch[name] = self.layout.to_sets(r[name][:: c.chunk_length], 2).reshape(self.layout.n_sets, -1, r[name].shape[-1])
        else:
            batch = {k: self._steps(r[k]).reshape(self.layout.n_sets, -1, *r[k].shape[3:]) for k in fields if k in r}
        p = self.layout.n_sets
        valid = batch["valid"].reshape(p, -1)
        own = batch["advantage"].reshape(p, -1)
        if algorithm.scale is not None:
            algorithm.scale.update(batch["returns"].reshape(p, -1), valid)
        if c.normalize_advantages:
            count = np.maximum(valid.sum(axis=1, keepdims=True), 1)
            mean = (own * valid).sum(axis=1, keepdims=True) / count
            std = np.sqrt((((own - mean) ** 2) * valid).sum(axis=1, keepdims=True) / count)
            batch["advantage"] = ((own - mean) / (std + 1e-8)).reshape(batch["advantage"].shape)
        batch["advantage"] = batch["advantage"].astype(np.float32)
        shared = self._shared(batch, np.abs(own)) if self.shares else {}
        for _ in range(c.epochs):
            for minibatch in self._minibatches(batch):
                _, metrics = algorithm.update({**minibatch, **shared})
                self._check_finite(metrics)
                self.tally.updates += 1
                self.tally.add(metrics)
                self.updates += 1
        self.tally.add({"explained_variance": _explained_variance(r["value"], r["returns"], r["valid"])})

    def _minibatches(self, batch: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """One pass's minibatches of the rollout's steps (recurrent: chunks) in a random order,
        cut between agents' rows or between whole env steps (``minibatch_unit``). A critic of
        one value per env step gets one minibatch as the whole rollout in its own order: whole
        env steps, whatever the unit."""
        c = self.config
        if c.minibatches == 1 and self.algorithm.whole_steps:
            return [batch]
        axis = 2 if self.algorithm.recurrent else 1
        # a whole env step (or env copy's chunk) is the group's N rows; with a parameter set
        # per agent, each set's rows are env steps already
        group = self.spec.n_agents if c.minibatch_unit == "env_step" and self.layout.n_sets == 1 else 1
        order = self.rng.permutation(batch["valid"].shape[axis] // group)
        parts = [(part[:, None] * group + np.arange(group)).ravel() for part in np.array_split(order, c.minibatches)]
        minibatches = [{k: v[:, part] if (axis == 1 or k in ("actor_h", "critic_h")) else v[:, :, part] for k, v in batch.items()} for part in parts]
        if self.algorithm.value_per_step and group == 1:
            # agents' rows of the same env step (or env copy's chunk) give the critic one input
            # and one memory: it runs once on each (the first row) and the others take its value
            for minibatch, part in zip(minibatches, parts):
                _, minibatch["critic_rows"], minibatch["critic_inverse"] = np.unique(part // self.spec.n_agents, return_index=True, return_inverse=True)
        return minibatches

    def _shared(self, batch: dict[str, np.ndarray], score: np.ndarray) -> dict[str, np.ndarray]:
        """SEAC's rows from other agents: each sender's selection by |advantage|, routed by
        the relay to the other members of the team."""
        selected = selection(self.selector, score, batch["valid"])
        return shared_rows(batch, self.relay.route(selected, batch["valid"], self.bytes_per_transition))

    def _check_finite(self, metrics: dict[str, float]) -> None:
        bad = [k for k in (self.algorithm.loss_metric, *self.algorithm.checked_metrics) if not np.isfinite(metrics.get(k, 0.0))]
        if bad:
            raise NonFiniteError(f"the {' and '.join(bad)} of the networks of policy {self.name!r} {'is' if len(bad) == 1 else 'are'} not finite")

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "algorithm": self.algorithm.state_dict(),
            "storage": self.storage,
            "filled": self.filled,
            "ready": self.ready,
            "hidden": self.hidden,
            "last_over": self.last_over,
            "rng": self.rng.bit_generator.state,
            "tally": asdict(self.tally),
            "exploration_scale": self.exploration_scale,
            "lr": self.lr,
            "updates": self.updates,
            "rollouts": self.rollouts,
        }
        if self.shares:
            state.update(selector=self.selector.state_dict(), relay=asdict(self.relay.stats))
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(state["algorithm"])
        self.storage, self.filled, self.ready = dict(state["storage"]), state["filled"], list(state["ready"])
        self.hidden, self.last_over = state["hidden"], state["last_over"]
        self.rng.bit_generator.state = state["rng"]
        self.tally = MetricTally(**state["tally"])
        self.exploration_scale, self.lr = state["exploration_scale"], state["lr"]
        self.updates, self.rollouts = state["updates"], state["rollouts"]
        if self.shares:
            self.selector.load_state_dict(state["selector"])
            self.relay.stats = RelayStats(**state["relay"])


def shared_rows(batch: dict[str, np.ndarray], receive: np.ndarray) -> dict[str, np.ndarray]:
    """The steps some agent receives, from the agents' own rows ``[N, M, ...]``, as
    ``shared_*`` rows ``[1, R, ...]`` with ``shared_weight [N, R]``: where agent i receives
    the row, 1 / its sender's step count (SEAC's mean over the sender's steps), else 0.
    ``receive [N, N * M]``: the relay's routing over sender-major rows."""
    taken = np.flatnonzero(receive.any(axis=0))
    if not len(taken):
        return {}
    n, m = batch["valid"].shape
    steps = np.repeat(np.maximum(batch["valid"].sum(axis=1), 1), m)[taken]
    rows = {f"shared_{k}": batch[k].reshape(1, n * m, *batch[k].shape[2:])[:, taken] for k in SHARED if k in batch}
    rows["shared_weight"] = (receive[:, taken] / steps).astype(np.float32)
    return rows


def rollout_plan(spec: GroupSpec, config: Any) -> ReplayPlan:
    """The rollout storage of one env copy (the memory check): ``rollout_length`` steps of
    each agent's observation, critic input and action, and seven numbers."""
    fields = {"obs": FieldSpec(spec.obs_shape, spec.obs_dtype), "action": FieldSpec(spec.action_shape, np.dtype(np.float32)), "numbers": FieldSpec((7,), np.dtype(np.float32))}
    return ReplayPlan(spec.n_agents, config.rollout_length, fields)


def _explained_variance(values: np.ndarray, returns: np.ndarray, valid: np.ndarray) -> float:
    """1 - Var(returns - values) / Var(returns) over the valid steps (1: the critic predicts
    the returns; 0 or less: no better than their mean)."""
    y, v = returns[valid], values[valid]
    spread = y.var()
    return float(1.0 - (y - v).var() / spread) if spread > 0 else float("nan")
