"""The learners of a run's learning policies, by policy id (DESIGN.md §4): one protocol
for learners that learn in the training process (``LearnerPool``) and learners in Ray
actors (``relayrl.arena.ray.learning.RayLearnerPool``), so the run never asks where they
are.

Per fragment (``step``, SPEC §1.1): every learner observes its policy's fragment, the
exchanges between learners move what they share (DASE's shared replay fills), every
learner takes the updates it earned, and the SUPER relay between learners delivers what
each selected. The learners here are the policies' own (``home``): what acts, what
schemes and hooks change, what checkpoints hold. Learners update with their networks' inner
products in the run's ``precision`` (``relayrl.nets.precision``).
"""

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from relayrl.algos.algorithm import Learner
from relayrl.nets.precision import Precision, inner_products
from relayrl.sharing.exchange import Exchange


class LearnerPool(Mapping[str, Learner]):
    """Learners by policy id, learning here, and the exchanges between them."""

    def __init__(self, learners: dict[str, Learner], exchanges: list[Exchange], precision: Precision = "float32") -> None:
        self.home = learners
        self.exchanges = exchanges
        self.precision = precision
        for exchange in exchanges:
            exchange.connect(learners)

    def __getitem__(self, pid: str) -> Learner:
        return self.home[pid]

    def __iter__(self) -> Iterator[str]:
        return iter(self.home)

    def __len__(self) -> int:
        return len(self.home)

    def step(self, fragments: dict[str, dict[str, np.ndarray]], env_steps: int) -> int:
        """Observe, exchange, learn (a round may give a policy no entity: it only learns);
        returns the agent steps observed."""
        agent_steps = sum(self.home[pid].observe(fragments[pid]) for pid in self.home if pid in fragments)
        for exchange in self.exchanges:
            exchange.before_learn(self.home)
        with inner_products(self.precision):
            for learner in self.home.values():
                learner.learn(env_steps)
        for exchange in self.exchanges:
            exchange.after_learn(self.home)
        return agent_steps

    def end_workers(self, workers: dict[str, np.ndarray]) -> None:
        """The episodes in flight of these workers (per policy) end as truncations: their env
        copies restarted."""
        for pid, ended in workers.items():
            if pid in self.home and len(ended):
                self.home[pid].end_workers(ended)

    def acting_states(self) -> dict[str, dict[str, Any]]:
        """Every learner's acting networks (``policy_state``), for acting copies elsewhere."""
        return {pid: learner.policy_state() for pid, learner in self.home.items()}

    def report(self, env_steps: int) -> dict[str, dict[str, Any]]:
        """Every learner's metrics since the last report (``Learner.report``)."""
        return {pid: learner.report(env_steps) for pid, learner in self.home.items()}

    def exchange_columns(self) -> tuple[str, ...]:
        return tuple(column for exchange in self.exchanges for column in exchange.columns())

    def exchange_report(self, reports: Mapping[str, dict[str, Any]]) -> dict[str, float]:
        return {key: value for exchange in self.exchanges for key, value in exchange.report(reports).items()}

    def away(self) -> None:
        """Where learners learn elsewhere, they go there with the home copies' state (the
        start of training, and of a round, after its schemes and hooks changed them)."""

    def call_home(self) -> None:
        """Where learners learn elsewhere, their state comes into the home copies, which stay
        in charge until ``away`` (a round's end, for its schemes and hooks; the run's end)."""

    def sync_home(self) -> None:
        """Where learners learn elsewhere, their state comes into the home copies while they
        go on learning there (a checkpoint)."""

    def idle(self) -> list[str]:
        """A line for each learner that has not updated yet, saying when it will."""
        return [f"policy {pid!r} has made no update: it learns {learner.first_update()}" for pid, learner in self.home.items() if learner.updates == 0]

    def state_dict(self) -> dict[str, Any]:
        """The exchanges' state (the learners' own is their policies', in the home copies:
        ``sync_home`` first)."""
        return {"exchanges": [exchange.state_dict() for exchange in self.exchanges]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.exchanges:
            for exchange, saved in zip(self.exchanges, state["exchanges"], strict=True):
                exchange.load_state_dict(saved)

    def close(self) -> None:
        """Learners elsewhere stop; the home copies stay as they are (``call_home`` first
        to keep what they learned since)."""
