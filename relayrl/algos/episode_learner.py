"""The learner of algorithms that train recurrent agents on episodes (QMIX, VDN, recurrent
IQL; SPEC §1.3-1.4, paper 003).

Its storage (``storage``, a registry) keeps the group's experience: whole episodes as
replay rows (``relayrl.replay.episodes``; ``observe`` completes each worker's episode in
flight), or every transition as a row, spans gathered from consecutive ones
(``relayrl.replay.sequences``). ``learn`` takes ``updates_per_episode`` gradient steps per
finished episode once the replay holds a batch (paper 003: with E env copies, E times the
updates of one), each on a batch of slots (episodes, or spans' first steps) drawn by the
sampler: uniform without replacement, prioritized (Schaul et al.'s proportional PER, with
importance weights), or AccMER's reuse of the highest-weight slots
(``relayrl.replay.reuse``; reuse_ratio 0 is the uniform draw). The algorithm's per-slot
weights go back into the priorities or the reuse table after every update. Targets sync
every ``target_update_episodes`` finished episodes.
"""

import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from relayrl.algos.algorithm import ALGORITHMS
from relayrl.algos.learner import LearnerBase, MetricTally
from relayrl.core.errors import ConfigError, NonFiniteError
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.replay.episodes import EpisodeStorage, EpisodeTooLong
from relayrl.replay.reuse import ReuseSampler
from relayrl.replay.sequences import TransitionSequences
from relayrl.sharing.config import SharingConfig

STORAGES = {"episodes": EpisodeStorage, "transitions": TransitionSequences}


def storage_fields(spec: GroupSpec, config: Any) -> dict:
    """The replay row of ``config.storage`` (an episode, or a transition)."""
    return STORAGES[config.storage].fields(spec, config.max_episode_length)


class EpisodeLearner(LearnerBase):
    """A learning policy's episodes, replay, sampler and update budget for one algorithm
    that mixes the N agents of its group."""

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
        super().__init__(spec, algo, config.learner_params(), ALGORITHMS[algo].make(spec, config, 1, device, seeds[0]), None)
        self.config = config
        self.timer = timer
        plan = ALGORITHMS[algo].plan(spec, config)  # one replay of buffer_size episodes
        self.fields = plan.fields
        self.replay = plan.build(alpha=config.priority_alpha, beta=config.priority_beta, seed=seeds[1])
        self.prioritized = config.sampler == "prioritized"
        self.storage = STORAGES[config.storage].from_config(self.replay, config)
        alpha = config.reuse_ratio if config.sampler == "reuse" else 0.0
        self.sampler = None if self.prioritized else ReuseSampler(config.buffer_size, config.batch_size, alpha, config.reuse_decay, config.reuse_period, seed=seeds[2])
        self.tally = MetricTally()
        self.updates = 0
        self.updates_owed = 0.0
        self.episodes = 0  # finished episodes stored
        self.unlearned_episodes = 0
        self.last_target_sync = 0  # in episodes
        self.rng = np.random.default_rng(seeds[3])  # where spans start in stored episodes

    bytes_per_transition = 0  # it relays nothing

    not_exchanged = "learns from whole episodes of its group's agents together"
    export_relay = outgoing = incoming = join_shared_replay = shared_rows = shared_size = LearnerBase._not_exchanged

    @property
    def metric_columns(self) -> tuple[str, ...]:
        """The algorithm's metrics, and ``sample_share``: the wall-clock share of the learner's
        updates spent drawing and gathering batches (what AccMER's reuse saves on)."""
        return (*self.algorithm.metric_columns, "sample_share")

    def observe(self, fragment: dict[str, np.ndarray]) -> int:
        """Stores a fragment ``[T, W, N, ...]`` (the episodes it finished, or its transitions)."""
        with self.timer("replay add"):
            steps = {k: v.astype(self.fields[k].dtype, copy=False) if k in self.fields else v for k, v in fragment.items()}
            try:
                self._stored(*self.storage.add(steps))
            except EpisodeTooLong as error:
                key = f"{ALGORITHMS[self.algo].section}.max_episode_length"
                raise ConfigError(
                    f"policy {self.name!r}: an episode ran past {key}={error.max_length} steps, the longest its replay stores; "
                    f"train again with {key} at the env's episode limit or more (a resume keeps the run's settings)"
                ) from None
        return int(fragment["valid"].sum())

    def end_workers(self, workers: np.ndarray) -> None:
        """The episodes in flight of ``workers`` (indices of the fragments' worker axis) end
        as truncations at the last step observed, and count as finished: their env copies
        were restarted elsewhere."""
        with self.timer("replay add"):
            self._stored(*self.storage.end_workers(workers))

    def _stored(self, slots: np.ndarray, finished: int) -> None:
        """``finished`` episodes ended, written into ``slots``."""
        if self.sampler is not None and len(slots):
            self.sampler.written(slots)
        self.episodes += finished
        self.unlearned_episodes += finished

    def first_update(self) -> str:
        rows = "episodes" if self.config.sequence_length is None or self.config.storage == "episodes" else "stored steps"
        return f"once its replay holds {self.config.batch_size:,} {rows} ({ALGORITHMS[self.algo].section}.batch_size)"

    def learn(self, env_steps: int) -> None:
        """The gradient steps the finished episodes earned, once a batch is stored; then a
        target sync when ``target_update_episodes`` more episodes finished."""
        c = self.config
        collected, self.unlearned_episodes = self.unlearned_episodes, 0
        if self.storage.size >= c.batch_size:
            self.updates_owed += collected * c.updates_per_episode
            n_updates = int(self.updates_owed)
            self.updates_owed -= n_updates
            self._train(n_updates)
        if self.episodes - self.last_target_sync >= c.target_update_episodes:
            self.algorithm.sync_target()
            self.last_target_sync = self.episodes

    def _draw(self) -> tuple[np.ndarray, np.ndarray | None, int]:
        """The next batch's slots, their importance weights (prioritized replay only) and how
        many of them are AccMER's reuse set."""
        if self.prioritized:
            sampled = self.replay.sample(self.config.batch_size, gather=False)
            return sampled.indices[0], sampled.weights[0], 0
        assert self.sampler is not None
        return self.sampler.sample(self.storage.size), None, self.sampler.n_reused

    def _train(self, n_updates: int) -> None:
        for _ in range(n_updates):
            start = time.perf_counter()
            with self.timer("sample"):
                slots, importance, reused = self._draw()
                gathered = self.storage.gather(slots, reused)
            sampled = time.perf_counter()
            with self.timer("update"):
                weights, metrics = self.algorithm.update(self.storage.spans(gathered, self.rng), importance)
            metrics["sample_share"] = (sampled - start) / (time.perf_counter() - start)
            if not all(np.isfinite(metrics[k]) for k in (self.algorithm.loss_metric, *self.algorithm.checked_metrics)):
                raise NonFiniteError(f"the {self.algorithm.loss_metric} of policy {self.name!r} is not finite")
            with self.timer("sample"):
                if self.prioritized:
                    self.replay.update_priorities(slots[None], weights[None])
                else:
                    self.sampler.update(slots, weights)
            self.tally.updates += 1
            self.tally.add(metrics)
            self.updates += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm.state_dict(),
            "replay": self.replay.state_dict(),
            "storage": self.storage.state_dict(),
            "rng": self.rng.bit_generator.state,
            "sampler": None if self.sampler is None else self.sampler.state_dict(),
            "tally": asdict(self.tally),
            "exploration_scale": self.exploration_scale,
            "budget": {
                "updates": self.updates,
                "updates_owed": self.updates_owed,
                "episodes": self.episodes,
                "unlearned_episodes": self.unlearned_episodes,
                "last_target_sync": self.last_target_sync,
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(state["algorithm"])
        self.replay.load_state_dict(state["replay"])
        self.storage.load_state_dict(state["storage"])
        self.rng.bit_generator.state = state["rng"]
        if self.sampler is not None:
            self.sampler.load_state_dict(state["sampler"])
        self.tally = MetricTally(**state["tally"])
        self.exploration_scale = state["exploration_scale"]
        budget = state["budget"]
        self.updates, self.updates_owed, self.episodes = budget["updates"], budget["updates_owed"], budget["episodes"]
        self.unlearned_episodes, self.last_target_sync = budget["unlearned_episodes"], budget["last_target_sync"]
