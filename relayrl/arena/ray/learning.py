"""Learners in Ray actors (paper 004, section 4.1: the policies of a run learn in parallel),
driven through the ``LearnerPool`` protocol (``relayrl.arena.learning``).

The home copies (the policies' learners in the driver) act, and hold the state that schemes,
hooks and checkpoints read: the actors start from them at the first ``away``, take their
state again at every later one (a round's start), and give theirs back at ``call_home`` (a
round's end, the run's end) and ``sync_home`` (a checkpoint). After each fragment every
learner's acting networks come back and load into its home copy. The exchanges between
learners run on the actors' proxies; a shared replay lives in an actor of its own.
"""

from typing import Any

import numpy as np

from relayrl.algos.algorithm import Learner
from relayrl.arena.learning import LearnerPool
from relayrl.arena.policy import PolicyBuild
from relayrl.arena.ray.learners import LearnerActor, RemoteLearner, RemoteSharedReplay, wait_started
from relayrl.nets.precision import Precision
from relayrl.sharing.exchange import Exchange, SharedReplayBetween


class RayLearnerPool(LearnerPool):
    """A learner actor for every learning policy of a run (and an actor for the replay that
    learners share, where they share one), each reserving ``learner_cpus``."""

    def __init__(
        self, learners: dict[str, Learner], exchanges: list[Exchange], builds: dict[str, PolicyBuild], ray: Any, learner_cpus: float, threads: int, keep_memory: bool,
        precision: Precision,
    ) -> None:
        super().__init__(learners, exchanges, precision)
        self.builds, self.ray, self.learner_cpus, self.threads, self.keep_memory = builds, ray, learner_cpus, threads, keep_memory
        self.remote: dict[str, RemoteLearner] = {}  # while actors run
        self.shared_replay: RemoteSharedReplay | None = None
        self.away_now = False

    def _start(self) -> None:
        actor_class = self.ray.remote(num_cpus=self.learner_cpus)(LearnerActor)
        self.remote = {pid: RemoteLearner(learner, self.builds[pid], self.ray, actor_class, self.threads, self.keep_memory, self.precision) for pid, learner in self.home.items()}
        try:
            for exchange in self.exchanges:
                exchange.connect(self.remote)
                if isinstance(exchange, SharedReplayBetween):  # its replay goes to an actor of its own
                    self.shared_replay = RemoteSharedReplay(exchange.replay, self.ray)
                    exchange.host = self.shared_replay
            wait_started(self.ray, {pid: remote.start(self.shared_replay) for pid, remote in self.remote.items()})
        except BaseException:
            self.close()
            raise

    def away(self) -> None:
        if not self.remote:
            self._start()
        else:
            for remote in self.remote.values():
                remote.send_away()
        self.away_now = True

    def _learners(self) -> dict[str, Any]:
        return self.remote if self.away_now else self.home

    def step(self, fragments: dict[str, dict[str, np.ndarray]], env_steps: int) -> int:
        """As ``LearnerPool.step``, the learners in their actors in parallel; their acting
        networks then load into the home copies (what the next fragment acts with)."""
        if not self.away_now:
            return super().step(fragments, env_steps)
        agent_steps = sum(self.remote[pid].observe(fragments[pid]) for pid in self.remote if pid in fragments)
        for exchange in self.exchanges:
            exchange.before_learn(self.remote)
        for remote in self.remote.values():
            remote.learn(env_steps)
        for pid, remote in self.remote.items():
            self.home[pid].load_policy_state(remote.settle(), "its learner actor")
        for exchange in self.exchanges:
            exchange.after_learn(self.remote)
        return agent_steps

    def end_workers(self, workers: dict[str, np.ndarray]) -> None:
        learners = self._learners()
        for pid, ended in workers.items():
            if pid in learners and len(ended):
                learners[pid].end_workers(ended)

    def report(self, env_steps: int) -> dict[str, dict[str, Any]]:
        return {pid: learner.report(env_steps) for pid, learner in self._learners().items()}

    def sync_home(self) -> None:
        if self.away_now:
            for remote in self.remote.values():
                remote.bring_home()
            if self.shared_replay is not None:
                self.shared_replay.bring_home()

    def call_home(self) -> None:
        self.sync_home()
        self.away_now = False

    def close(self) -> None:
        for remote in self.remote.values():
            if remote.actor is not None:
                remote.close()
        if self.shared_replay is not None:
            self.shared_replay.close()
        for exchange in self.exchanges:
            if isinstance(exchange, SharedReplayBetween):
                exchange.host = exchange.replay
        self.remote, self.shared_replay, self.away_now = {}, None, False
