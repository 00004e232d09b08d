"""The one off-policy learner: an algorithm fed from replay, with sharing and its update
budget (DESIGN.md §4).

Per fragment of its entities' steps ``[T, E, N, ...]`` (SPEC §1.1, paper 001 C.2):
``observe`` (1) builds n-step transitions and inserts each agent's own into its replay, or
every agent's into one shared replay tagged with the collector; (2) with a relay, each
sender scores its new transitions by |td| with its current networks, selects, and the
relay inserts the selection into the other agents' replays. ``learn`` (3) takes the
gradient steps the env steps so far have earned, every agent on its own draw, weighted by
the correction (importance weights of prioritised replay, or DPS on a shared replay), and
syncs hard targets on schedule.
"""

import math
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from relayrl.algos.algorithm import ALGORITHMS, Learner, OffPolicyParams
from relayrl.algos.layout import AgentLayout
from relayrl.algos.learner import LearnerBase, MetricTally
from relayrl.algos.nstep import NStepBuilder, Transitions
from relayrl.core.errors import ConfigError, NonFiniteError
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.replay import FieldSpec, ReplayBuffer, ReplayPlan, row_nbytes
from relayrl.replay.shared import RowSource, SharedDraws
from relayrl.sharing.config import CORRECTIONS, SharingConfig
from relayrl.sharing.corrections import DPSCorrection, ExternalWeights
from relayrl.sharing.relay import Relay, RelayStats
from relayrl.sharing.selectors import selection


def replay_plan(spec: GroupSpec, algo: str, params: OffPolicyParams, sharing: SharingConfig) -> ReplayPlan:
    """The replay a learner allocates, known before anything is built (the memory check):
    one buffer per parameter set, or one shared buffer whose rows name their collector."""
    acting = ALGORITHMS[algo].fields(spec)  # obs and action, as the algorithm stores them
    scalar = FieldSpec((), np.float32)
    fields = {"obs": acting["obs"], "action": acting["action"], "reward": scalar, "next_obs": acting["obs"], "discount": scalar}
    fields.update({name: field for name, field in acting.items() if name not in fields})  # e.g. next_action_mask
    if sharing.replay == "shared":
        fields["agent"] = FieldSpec((), np.int16)
        return ReplayPlan(1, params.buffer_size, fields)
    n_sets = AgentLayout(spec.n_agents, params.param_sharing).n_sets
    return ReplayPlan(n_sets, params.buffer_size, fields, params.prioritized)


class OffPolicyLearner(LearnerBase):
    """What a learning policy drives for one group ``[E, N, ...]``: P parameter sets of an
    algorithm (P = N independent agents, 1 with parameter sharing), their replay, n-step
    builder, sharing and update budget."""

    def __init__(
        self,
        spec: GroupSpec,
        algo: str,
        config: Any,
        sharing: SharingConfig,
        device: torch.device,
        seeds: list[int],
        timer: SectionTimer,
        **options: Any,
    ) -> None:
        """``config``: the algorithm's config section (it gives the ``OffPolicyParams``);
        ``seeds``: algorithm, replay, sharing; ``options``: what the algorithm's builder
        takes besides (the DQN's network shape)."""
        s = config.learner_params()
        layout = AgentLayout(spec.n_agents, s.param_sharing)
        super().__init__(spec, algo, s, ALGORITHMS[algo].make(spec, config, layout.n_sets, device, seeds[0], **options), layout)
        self.sharing = sharing
        self.timer = timer
        plan = replay_plan(spec, algo, s, sharing)
        self.fields = plan.fields
        self.replay: ReplayBuffer | None = plan.build(alpha=s.alpha, beta=s.beta, eps=s.priority_eps, seed=seeds[1])
        self.replay_seed = seeds[1]
        self.draws: SharedDraws | None = None  # a replay shared with other learners (shared_replay.between)
        self.bytes_per_transition = row_nbytes(plan.fields)
        self.batch_size = s.batch_size * (spec.n_agents if s.param_sharing else 1)
        self.nstep = NStepBuilder(s.n_step, s.gamma, s.time_limit_as_terminal)
        self.one_replay = sharing.replay == "shared"  # its agents fill one replay (DASE)
        self.relay: Relay | None = None
        self.correction: DPSCorrection | None = None
        if self.one_replay:
            self.correction = CORRECTIONS[sharing.correction](sharing, config.exploration_noise, device, seeds[2])
        elif sharing.select != "none":
            self.selector, self.relay = sharing.selection(spec.name, spec.n_agents, seeds[2])
        self.outbox: list[dict[str, np.ndarray]] = []
        self.tally = MetricTally()
        self.updates = 0  # gradient steps per agent
        self.updates_owed = 0.0
        self.unlearned_env_steps = 0
        self.last_target_sync = 0

    @property
    def metric_columns(self) -> tuple[str, ...]:
        """Metrics reported besides the loss: the algorithm's, and the correction's."""
        extra = ("dps_weight", "external_fraction") if self.correction is not None else ()
        return (*self.algorithm.metric_columns, *extra)

    # ------------------------------------------------------------------ experience
    def observe(self, fragment: dict[str, np.ndarray]) -> int:
        """Stores a fragment ``[T, E, N, ...]`` (steps 1-2 above); returns its agent steps."""
        with self.timer("replay add"):
            t = self.nstep.add(fragment)
            rows, mask = self._per_set(t)
            self.algorithm.observe(rows["obs"], mask)
            if self.one_replay:
                rows, mask = self._tagged(t)
            td_abs = self._scores(rows) if self.params.new_priority == "td" and self.draws is None and mask.any() else None
            if self.draws is not None:
                self.draws.put({k: v[mask] for k, v in rows.items()})
            elif mask.any():
                fresh = np.ones(mask.shape) if self.params.new_priority == "one" else td_abs  # None: each buffer's max
                self.replay.add(rows, mask=mask, priorities=fresh)
        if self.relay is not None and mask.any():
            with self.timer("td + relay"):
                self._relay(rows, mask, td_abs)
        self.unlearned_env_steps += fragment["reward"].shape[0] * fragment["reward"].shape[1]
        return int(fragment["valid"].sum())

    def outgoing(self) -> tuple[dict[str, np.ndarray] | None, int]:
        """What this learner's agents selected since the last call, for the other learners of
        ``relay.between`` (replay rows ``[K, ...]`` and the senders' |td| as ``priority``;
        None if nothing), and K."""
        if not self.outbox:
            return None, 0
        start = time.perf_counter()
        box, self.outbox = self.outbox, []
        rows = {k: np.concatenate([b[k] for b in box]) for k in box[0]}
        self.tally.add({"relay_s": time.perf_counter() - start})
        return rows, len(rows["priority"])

    def incoming(self, parts: list[dict[str, np.ndarray]]) -> None:
        """Transitions other learners relayed (their ``outgoing`` rows): stored in every
        agent's replay, as a SUPER receiver stores its peers' (paper 000 section 4.1), at the
        senders' |td| where ``sharing.priority`` is ``sender_td``."""
        start = time.perf_counter()
        with self.timer("td + relay"):
            rows = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
            data = {k: v for k, v in rows.items() if k != "priority"}
            n, k = self.layout.n_sets, len(rows["priority"])
            priorities = np.broadcast_to(rows["priority"][None], (n, k)) if self.sharing.priority == "sender_td" else None
            self.replay.add(data, priorities=priorities)
        self.tally.add({"relay_s": time.perf_counter() - start})  # the seconds relaying between learners costs

    def join_shared_replay(self, first_agent: int, source: RowSource | None) -> None:
        """From now on this learner's agents store into and draw from a replay shared with
        other learners (``relayrl.replay.shared``), tagged ``first_agent`` + their index; its
        own replay goes. The exchange hands the rows over (``shared_rows``) and reports the
        shared replay's size (``shared_size``) before each ``learn``; ``source`` is where
        draws gather the rows (``shared_source`` changes it)."""
        if self.correction is None:
            raise ConfigError(f"policy {self.name!r} does not learn from a shared replay: set its sharing.replay=shared (DASE)")
        self.draws = SharedDraws(first_agent, self.replay_seed)
        self.draws.source = source
        self.replay = None

    def shared_source(self, source: RowSource) -> None:
        """Where the shared replay's rows are gathered from now (another actor's replay)."""
        assert self.draws is not None
        self.draws.source = source

    def shared_rows(self) -> dict[str, np.ndarray] | None:
        """The tagged rows observed since the last call, for the shared replay."""
        assert self.draws is not None
        return self.draws.take()

    def shared_size(self, size: int) -> None:
        """The shared replay's size once this fragment's rows are in: what ``learn`` draws from."""
        assert self.draws is not None
        self.draws.size = size

    def end_workers(self, workers: np.ndarray) -> None:
        """The episodes in flight of ``workers`` (indices of the fragments' worker axis) end
        as truncations at the last step observed: their env copies were restarted elsewhere."""
        self.nstep.end_workers(workers)

    def _stored(self, t: Transitions) -> dict[str, np.ndarray]:
        data = {"obs": t.obs, "action": t.action, "reward": t.reward, "next_obs": t.next_obs, "discount": t.discount}
        data.update({k: v for k, v in t.successor.items() if k in self.fields})
        return {k: v.astype(self.fields[k].dtype, copy=False) for k, v in data.items()}

    def _per_set(self, t: Transitions) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``[T, E, N, ...]`` transitions -> per-set rows ``[P, M, ...]`` and mask ``[P, M]``."""
        rows = {k: self.layout.to_sets(v.reshape(-1, *v.shape[2:]), 1) for k, v in self._stored(t).items()}
        return rows, self.layout.to_sets(t.valid.reshape(-1, t.valid.shape[2]), 1)

    def _tagged(self, t: Transitions) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Every agent's transitions as rows of the one shared buffer, tagged ``agent``."""
        rows = {k: v.reshape(1, -1, *v.shape[3:]) for k, v in self._stored(t).items()}
        first = self.draws.first_agent if self.draws is not None else 0
        tags = np.arange(first, first + self.spec.n_agents, dtype=np.int16)
        rows["agent"] = np.broadcast_to(tags, t.valid.shape).reshape(1, -1)
        return rows, t.valid.reshape(1, -1)

    def _scores(self, rows: dict[str, np.ndarray]) -> np.ndarray:
        """What the selection ranks new rows ``[P, M]`` by: their |TD error| (SUPER)."""
        return np.abs(self.algorithm.td_error(rows))

    def _relay(self, rows: dict[str, np.ndarray], mask: np.ndarray, td_abs: np.ndarray | None = None) -> None:
        """Selects among the new rows by their |TD error| (``td_abs``, computed here where
        not given) and stores the selection in the receivers' replays."""
        assert self.relay is not None
        td_abs = self._scores(rows) if td_abs is None else td_abs
        selected = selection(self.selector, td_abs, mask)
        receive = self.relay.route(selected, mask, self.bytes_per_transition)
        n, m = mask.shape
        flat = {k: v.reshape(n * m, *v.shape[2:]) for k, v in rows.items()}
        if self.exports:
            picked = (selected & mask & self.relay.members[:, None]).reshape(-1)
            if picked.any():
                self.outbox.append({**{k: v[picked] for k, v in flat.items()}, "priority": td_abs.reshape(-1)[picked]})
        if not receive.any():
            return
        priorities = None
        if self.sharing.priority == "sender_td":
            priorities = np.broadcast_to(td_abs.reshape(1, n * m), receive.shape)
        self.replay.add(flat, mask=receive, priorities=priorities)

    # ------------------------------------------------------------------ learning
    def learn(self, env_steps: int) -> None:
        """Step 3: the gradient steps earned since the last call (one per agent per
        ``fragment_length`` env steps from ``learning_starts`` on, once every agent's replay
        holds a row: n-step rows complete n steps after they start), then a target sync when
        one is due."""
        s = self.params
        if env_steps >= s.learning_starts and (self.replay is None or self.replay.can_sample):
            owed = self.updates_owed + self.unlearned_env_steps / s.fragment_length
            n_updates = int(owed)
            # the budget is spent once the batches are drawn: a shared replay that could not
            # serve them leaves it as it was, for the same call again
            self._train(n_updates * s.updates_per_fragment)
            self.updates_owed = owed - n_updates
        self.unlearned_env_steps = 0
        if s.target_update_interval is not None and env_steps - self.last_target_sync >= s.target_update_interval:
            self.algorithm.sync_target()
            self.last_target_sync = env_steps

    def _train(self, n_updates: int) -> None:
        drawn = None
        if self.draws is not None and n_updates:
            start = time.perf_counter()
            with self.timer("sample"):
                drawn = self.draws.draw(n_updates, self.layout.n_sets * self.batch_size)
            self.tally.add({"draw_s": time.perf_counter() - start})  # drawing from the shared replay, wherever it lives
        for i in range(n_updates):
            with self.timer("sample"):
                if drawn is None:
                    data, weights, indices, external = self._sample()
                else:
                    data, weights, external = self._corrected({name: rows[i] for name, rows in drawn.items()})
            with self.timer("update"):
                priorities, metrics = self.algorithm.update(data, weights)
            self._check_finite(priorities, metrics)
            if self.params.prioritized:
                assert priorities is not None
                with self.timer("sample"):
                    self.replay.update_priorities(indices, np.abs(priorities))
            if external is not None:
                metrics.update(external.metrics())
            self.tally.updates += 1
            self.tally.add(metrics)
            self.updates += 1

    def _sample(self) -> tuple[dict[str, np.ndarray], Any, np.ndarray, ExternalWeights | None]:
        """Each agent's draw ``[P, B, ...]`` with its weights: prioritised replay's
        importance weights, or on a shared replay K independent uniform draws at once,
        corrected by DPS."""
        if self.correction is None:
            batch = self.replay.sample(self.batch_size)
            return batch.data, batch.weights if self.params.prioritized else None, batch.indices, None
        sampled = self.replay.sample(self.layout.n_sets * self.batch_size)
        data, weights, external = self._corrected({name: value[0] for name, value in sampled.data.items()})
        return data, weights, sampled.indices, external

    def _corrected(self, rows: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Any, ExternalWeights]:
        """K x B rows of a shared replay as each agent's draw ``[K, B, ...]``, with the
        correction's weights for the rows other agents collected."""
        k, b = self.layout.n_sets, self.batch_size
        data = {name: value.reshape(k, b, *value.shape[1:]) for name, value in rows.items()}
        assert self.correction is not None
        first = self.draws.first_agent if self.draws is not None else 0
        external = self.correction.weights(data, self.algorithm.scale, np.arange(first, first + k))
        return data, external.for_update(), external

    def _check_finite(self, priorities: np.ndarray | None, metrics: dict[str, float]) -> None:
        """A non-finite loss stops the run before its priorities are written, naming the
        agents whose TD errors went non-finite where it can tell."""
        bad = [k for k in (self.algorithm.loss_metric, *self.algorithm.checked_metrics) if k in metrics and not math.isfinite(metrics[k])]
        if not bad:
            return
        who = f"the networks of policy {self.name!r}"
        if priorities is not None and not self.params.param_sharing:
            rows = np.flatnonzero(~np.isfinite(priorities).all(axis=1))
            if len(rows):
                who = f"agent(s) {', '.join(self.spec.agent_ids[i] for i in rows)} of policy {self.name!r}"
        raise NonFiniteError(f"the {' and '.join(bad)} of {who} {'is' if len(bad) == 1 else 'are'} not finite")

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "algorithm": self.algorithm.state_dict(),
            "nstep": self.nstep.state_dict(),
            "tally": asdict(self.tally),
            "exploration_scale": self.exploration_scale,
            "budget": {
                "updates": self.updates,
                "updates_owed": self.updates_owed,
                "unlearned_env_steps": self.unlearned_env_steps,
                "last_target_sync": self.last_target_sync,
            },
        }
        if self.replay is not None:
            state["replay"] = self.replay.state_dict()
        if self.draws is not None:
            state["draws"] = self.draws.state_dict()
        if self.relay is not None:
            state.update(selector=self.selector.state_dict(), relay=asdict(self.relay.stats))
        if self.correction is not None:
            state["correction"] = self.correction.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(state["algorithm"])
        if self.replay is not None:
            self.replay.load_state_dict(state["replay"])
        if self.draws is not None:
            self.draws.load_state_dict(state["draws"])
        self.nstep.load_state_dict(state["nstep"])
        self.tally = MetricTally(**state["tally"])
        self.exploration_scale = state["exploration_scale"]
        budget = state["budget"]
        self.updates, self.updates_owed = budget["updates"], budget["updates_owed"]
        self.unlearned_env_steps, self.last_target_sync = budget["unlearned_env_steps"], budget["last_target_sync"]
        if self.relay is not None:
            self.selector.load_state_dict(state["selector"])
            self.relay.stats = RelayStats(**state["relay"])
        if self.correction is not None:
            self.correction.load_state_dict(state["correction"])


def learner_plan(spec: GroupSpec, algo: str, section: Any, sharing: SharingConfig) -> ReplayPlan:
    """The replay the learner of ``algo`` allocates for ``spec`` (the memory check)."""
    entry = ALGORITHMS[algo]
    return entry.plan(spec, section) if entry.plan is not None else replay_plan(spec, algo, section.learner_params(), sharing)


def make_learner(spec: GroupSpec, algo: str, section: Any, sharing: SharingConfig, device: torch.device, seeds: list[int], timer: SectionTimer, **options: Any) -> Learner:
    """The learner that feeds ``algo``: its registry entry's, else the off-policy learner."""
    build = ALGORITHMS[algo].learner or OffPolicyLearner
    return build(spec, algo, section, sharing, device, seeds, timer, **options)
