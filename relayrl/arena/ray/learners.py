"""Learners on Ray (paper 004, section 4.1: learners apart from the env processes): every
learning policy's learner in an actor of its own, so that the policies of a run learn in
parallel.

An actor builds its learner from the policy's recipe, as the driver did, and loads the
driver's learner state into it (what a checkpoint holds: the state is data, and a live
learner's arrays are views of one another that pickling would separate). Per fragment the
driver sends each learner actor its policy's fragment in one call, which stores it and
takes the updates it earned, and gets back the learner's update count and acting networks;
the driver loads those into its own copy of the learner, which the rollout, the env runners
(one object in Ray's store) and evaluations act with. The learners, their schedule and
their random streams are those of the driver's, so a run equals ``backend.learners:
driver`` for the same seed.

A replay shared by learners (``shared_replay.between``, DASE) lives in an actor of its own:
per fragment each learner actor returns its new rows, the replay actor adds them in the
list's order (the driver passes only the references) and returns its size, and each
learner actor then gathers its fragment's draws from it in one call. Its home is the
driver's copy too: a replay actor found dead, when the rows arrive or while learners draw
from it, restarts from there (losing the rows added since the last checkpoint), and the
learners that could not draw take their draws again from the new one.

The driver's copy is the learner's home: it takes the actor's whole state at every
checkpoint, at a round's end (the round's schemes and hooks work on the learners at home,
which go back to their actors when the next round starts) and at the run's end. A learner
actor that dies restarts from its home copy, so it loses what it learned and stored since
its last checkpoint (or the round's start), nothing else.
"""

import pickle
import sys
import time
from typing import Any

import numpy as np

from relayrl.algos.algorithm import Learner
from relayrl.arena.policy import LearningPolicy, PolicyBuild
from relayrl.arena.policy_config import POLICY_KINDS
from relayrl.arena.ray.runners import STARTUP_S
from relayrl.core.device import configure_threads
from relayrl.core.errors import ConfigError
from relayrl.core.memory import keep_freed_memory
from relayrl.core.registry import Plugins
from relayrl.nets.precision import Precision, inner_products
from relayrl.replay import ReplayPlan
from relayrl.replay.shared import SharedReplay


class RemoteRows:
    """A shared replay in another actor, as a learner's draws read it."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def gather(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        import ray

        return ray.get(self.actor.gather.remote(slots))


class SharedReplayActor:
    """A shared replay (a Ray actor's state), built from ``plan`` and loaded with the
    driver's state (data: the buffer's arrays are views of one another)."""

    def __init__(self, plan: ReplayPlan, state: bytes) -> None:
        self.replay = SharedReplay(plan, 0)
        self.replay.load_state_dict(pickle.loads(state))

    def ready(self) -> bool:
        return True

    def add(self, boxes: list[Any]) -> int:
        """Adds the learners' rows (their ``observe``'s objects, in order); the rows of a
        learner that died before handing them over are lost."""
        import ray

        parts = []
        for box in boxes:
            try:
                parts.append(ray.get(box) if box is not None else None)
            except ray.exceptions.RayError:
                parts.append(None)
        return self.replay.add(parts)

    def gather(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        return self.replay.gather(slots)

    def size(self) -> int:
        return self.replay.size

    def state_dict(self) -> bytes:
        return pickle.dumps(self.replay.state_dict(), protocol=pickle.HIGHEST_PROTOCOL)


class LearnerActor:
    """One learning policy's learner (a Ray actor's state), built from ``build`` and loaded
    with ``state``. States travel pickled both ways: the arrays Ray hands over as they are
    are read-only views of its object store, and a learner writes into its buffers."""

    def __init__(
        self, plugins: Plugins, build: PolicyBuild, state: bytes, threads: int, keep_memory: bool, precision: Precision, exports: bool, first_agent: int | None
    ) -> None:
        """``plugins``: the driver's registrations; ``keep_memory``, ``precision``: the run's
        settings; ``exports``: it relays to other learners; ``first_agent``: its agents'
        first tag in the replay it shares, where it shares one."""
        self.refused = plugins.load()
        if self.refused is not None:
            return  # ``ready`` says why; the driver stops the run
        configure_threads(threads)
        if keep_memory:
            keep_freed_memory()
        self.precision = precision
        policy = POLICY_KINDS[build.config.kind](build)
        assert isinstance(policy, LearningPolicy)
        self.learner = policy.learner
        if first_agent is not None:
            self.learner.join_shared_replay(first_agent, None)  # its source comes with each step
        self.learner.load_state_dict(pickle.loads(state))
        if exports:
            self.learner.export_relay()

    def ready(self) -> str | None:
        """None once its learner is built; else why it could not be (``Plugins.load``)."""
        return self.refused

    def observe(self, fragment: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """Observes the fragment of a learner of a shared replay; returns its new rows."""
        self.learner.observe(fragment)
        return self.learner.shared_rows()

    def step(
        self, fragment: dict[str, np.ndarray] | None, env_steps: int, replay: tuple[int, Any] | None = None
    ) -> tuple[tuple[int, dict[str, Any], int], Any]:
        """Observes the fragment (None: the policy drove no entity, or ``observe`` took it),
        learns (where it shares a replay, from ``replay``: its size and its actor); returns
        the update count, the acting networks and the number of transitions it relays to
        other learners, and (a second object) those transitions."""
        if fragment is not None:
            self.learner.observe(fragment)
        if replay is not None:
            size, actor = replay
            self.learner.shared_size(size)
            self.learner.shared_source(RemoteRows(actor))
        with inner_products(self.precision):
            self.learner.learn(env_steps)
        box, sent = self.learner.outgoing() if self.learner.exports else (None, 0)
        return (self.learner.updates, self.learner.policy_state(), sent), box

    def incoming(self, boxes: list[Any]) -> None:
        """Stores what other learner actors relayed (their ``step``'s second objects); a box
        whose sender died before sending it is lost."""
        import ray

        start = time.perf_counter()
        parts = []
        for box in boxes:
            try:
                parts.append(ray.get(box))
            except ray.exceptions.RayError:
                continue
        self.learner.tally.add({"relay_s": time.perf_counter() - start})  # fetching is part of what relaying costs
        if parts:
            self.learner.incoming(parts)

    def end_workers(self, workers: np.ndarray) -> None:
        self.learner.end_workers(workers)

    def report(self, env_steps: int) -> dict[str, Any]:
        return self.learner.report(env_steps)

    def state_dict(self) -> bytes:
        return pickle.dumps(self.learner.state_dict(), protocol=pickle.HIGHEST_PROTOCOL)

    def load_state_dict(self, state: bytes) -> None:
        self.learner.load_state_dict(pickle.loads(state))


def wait_started(ray: Any, ready: dict[str, Any]) -> None:
    """Waits for the learner actors of the policies in ``ready`` (their ``ready`` calls),
    which start in parallel: each imports torch and builds its learner."""
    _, waiting = ray.wait(list(ready.values()), num_returns=len(ready), timeout=STARTUP_S)
    if waiting:
        late = [pid for pid, ref in ready.items() if ref in waiting]
        raise ConfigError(f"the learner actors of policies {late} did not start within {STARTUP_S} s: "
                          f"free CPUs of the cluster: {ray.available_resources().get('CPU', 0.0):g}; lower backend.learner_cpus")
    refused = [why for why in ray.get(list(ready.values())) if why is not None]
    if refused:
        raise ConfigError(refused[0])


class HomedActor:
    """An actor started from a home copy on the driver, and started again from it where it
    dies (``_restart``)."""

    ray: Any
    actor: Any

    def _restart(self, error: Exception) -> None:
        raise NotImplementedError

    def call(self, method: str, *args: Any) -> Any:
        """The actor's ``method(*args)``, once more on a restarted actor where it died."""
        try:
            return self.ray.get(getattr(self.actor, method).remote(*args))
        except self.ray.exceptions.RayActorError as error:
            self._restart(error)
            return self.ray.get(getattr(self.actor, method).remote(*args))

    def close(self) -> None:
        self.ray.kill(self.actor)


class RemoteLearner(HomedActor):
    """A learner in its actor, as the learner pool and the exchanges drive it (the
    ``Learner`` methods they call: ``observe``, ``learn``, ``report``, ``end_workers``,
    ``outgoing``, ``incoming``, the shared replay's); ``home`` is the driver's copy, which
    acts (through its policy) and is what the actor starts and restarts from."""

    def __init__(self, home: Learner, build: PolicyBuild, ray: Any, actor_class: Any, threads: int, keep_memory: bool, precision: Precision) -> None:
        self.home, self.build, self.ray, self.actor_class = home, build, ray, actor_class
        self.threads, self.keep_memory, self.precision = threads, keep_memory, precision
        self.plugins = Plugins.here()
        self.name = home.name
        self.bytes_per_transition = home.bytes_per_transition
        self.exports = False  # set by the relay between learners (``export_relay``)
        self.first_agent: int | None = None  # set by a shared replay (``join_shared_replay``)
        self.shared_replay: "RemoteSharedReplay | None" = None  # the replay actor it draws from
        self.rows: Any = None  # the rows its last fragment adds to the shared replay (an object in Ray's store)
        self.size = 0  # the shared replay's size once they are in
        self.n_workers = 0  # the worker axis of its fragments (0 before the first)
        self.home_workers: int | None = None  # that of the fragments before the home copy's state (None: the same)
        self.updates = home.updates
        self.fragment: dict[str, np.ndarray] | None = None
        self.stepping: tuple[Any, dict[str, np.ndarray] | None, int] | None = None  # the call in flight
        self.box: Any = None  # the transitions the last step relays to other learners (an object in Ray's store)
        self.sent = 0
        self.actor: Any = None

    def export_relay(self) -> None:
        self.exports = True

    def join_shared_replay(self, first_agent: int, source: Any) -> None:
        """Its actor's learner joins the shared replay with tags from ``first_agent``; it
        draws from the replay actor (``RemoteSharedReplay``) given at ``start``."""
        self.first_agent = first_agent

    def start(self, shared_replay: "RemoteSharedReplay | None") -> Any:
        """Starts the actor from the home copy (after the exchanges connected); returns the
        reference that is ready once it is (``wait_started``), so that actors start together."""
        self.shared_replay = shared_replay if self.first_agent is not None else None
        self.actor = self._launch()
        return self.actor.ready.remote()

    def _launch(self) -> Any:
        state = pickle.dumps(self.home.state_dict(), protocol=pickle.HIGHEST_PROTOCOL)
        return self.actor_class.remote(self.plugins, self.build, state, self.threads, self.keep_memory, self.precision, self.exports, self.first_agent)

    def _restart(self, error: Exception) -> None:
        """A new actor from the home copy; the episodes in flight at its checkpoint end there
        (as truncations at the last step it observed), so that none spans the lost steps."""
        print(f"warning: the learner actor of policy {self.home.name!r} died ({type(error).__name__}): a new one starts from its "
              "last checkpoint (or its round's start); what it learned and stored since is lost", file=sys.stderr)
        self.ray.kill(self.actor)
        self.actor = self._launch()
        wait_started(self.ray, {self.home.name: self.actor.ready.remote()})
        workers = self.n_workers if self.home_workers is None else self.home_workers
        if workers:
            self.actor.end_workers.remote(np.arange(workers))

    def observe(self, fragment: dict[str, np.ndarray]) -> int:
        self.fragment = fragment
        self.n_workers = fragment["reward"].shape[1]
        if self.shared_replay is not None:  # its rows go to the shared replay before anyone learns
            self.rows = self.actor.observe.remote(fragment)
        return int(fragment["valid"].sum())

    def shared_rows(self) -> Any:
        rows, self.rows = self.rows, None
        return rows

    def shared_size(self, size: int) -> None:
        self.size = size

    def learn(self, env_steps: int) -> None:
        self.stepping = (self._step(None if self.shared_replay is not None else self.fragment, env_steps), self.fragment, env_steps)
        self.fragment = None

    def _step(self, fragment: dict[str, np.ndarray] | None, env_steps: int) -> Any:
        replay = (self.size, self.shared_replay.actor) if self.shared_replay is not None else None
        summary, self.box = self.actor.step.options(num_returns=2).remote(fragment, env_steps, replay)
        return summary

    def settle(self) -> dict[str, Any]:
        """Waits for the fragment's ``learn``; returns the acting networks after it."""
        assert self.stepping is not None, "learn first"
        ref, fragment, env_steps = self.stepping
        try:
            self.updates, networks, self.sent = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as error:
            if isinstance(error, self.ray.exceptions.RayTaskError):  # alive, but the shared replay it drew from died
                assert self.shared_replay is not None
                self.size = self.shared_replay.revive()
                fragment = None  # observed already; its draws failed before the learner changed: take them again
            else:
                self._restart(error)
                if fragment is not None and self.shared_replay is not None:  # its rows of this fragment went in, or were lost
                    self.actor.observe.remote(fragment)
                    fragment = None
            self.updates, networks, self.sent = self.ray.get(self._step(fragment, env_steps))
        self.stepping = None
        return networks

    def outgoing(self) -> tuple[Any, int]:
        """The last step's relayed transitions (an object in Ray's store, which receivers fetch
        themselves: the driver only passes the reference) and how many."""
        box, self.box = self.box, None
        return (box, self.sent) if self.sent else (None, 0)

    def incoming(self, boxes: list[Any]) -> None:
        self.actor.incoming.remote(boxes)

    def end_workers(self, workers: np.ndarray) -> None:
        self.actor.end_workers.remote(workers)

    def report(self, env_steps: int) -> dict[str, Any]:
        return self.call("report", env_steps)

    def bring_home(self) -> None:
        """The actor's whole state into the home copy (a checkpoint's, or the next start's)."""
        self.home.load_state_dict(pickle.loads(self.call("state_dict")))
        self.home_workers = self.n_workers

    def send_away(self) -> None:
        """The home copy's whole state into the actor (after the driver changed it)."""
        self.call("load_state_dict", pickle.dumps(self.home.state_dict(), protocol=pickle.HIGHEST_PROTOCOL))


class RemoteSharedReplay(HomedActor):
    """The shared replay while its learners are away: an actor started from the driver's
    copy (its home), whose state comes home at checkpoints and the run's end."""

    def __init__(self, home: SharedReplay, ray: Any) -> None:
        self.home, self.ray = home, ray
        self.actor_class = ray.remote(num_cpus=0)(SharedReplayActor)
        self.actor = self._start()

    def _start(self) -> Any:
        state = pickle.dumps(self.home.state_dict(), protocol=pickle.HIGHEST_PROTOCOL)
        actor = self.actor_class.remote(self.home.plan, state)
        self.ray.get(actor.ready.remote(), timeout=STARTUP_S)
        return actor

    def _restart(self, error: Exception) -> None:
        """A new replay actor from the home copy (the rows added since its last checkpoint are lost)."""
        print(f"warning: the shared replay's actor died ({type(error).__name__}): a new one starts from its last checkpoint; "
              "the rows added since are lost", file=sys.stderr)
        self.ray.kill(self.actor)
        self.actor = self._start()

    def add(self, boxes: list[Any]) -> int:
        """The learners' rows in order; returns the size after them."""
        return self.call("add", boxes)

    def revive(self) -> int:
        """The size of a live replay actor (a new one where it died)."""
        return self.call("size")

    def bring_home(self) -> None:
        self.home.load_state_dict(pickle.loads(self.call("state_dict")))
