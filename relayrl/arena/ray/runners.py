"""Env runners on Ray (paper 004, sections 4.1-4.2: env processes stepping their envs with
the current policies, learners elsewhere): one run's E env copies split into K contiguous
slices, each stepped by a Ray actor with acting copies of the policies.

Per fragment the driver puts the learning policies' networks into Ray's object store once,
every runner loads them, steps its copies ``n_steps`` times through the same ``Rollout`` as
the local backend and returns its per-policy fragments and finished episodes; the driver
joins the fragments along the worker axis in copy order, which is the order the local
backend gives them (``compile_matches`` orders a policy's workers by copy), so the
learners see the same arrays either way.

Randomness: with one runner its copies reset with the run's seed and its policies continue
the driver's exploration streams (the pickled copies carry them), so a run equals the local
backend's; with K runners, runner k resets with the k-th of K seeds derived from the run's
and reseeds its policies' exploration streams alike. Recurrent carries and env states live
in the runners; a checkpoint takes them from there.

Faults: a runner that died (its process or its node) is replaced by a new one over the same
copies, reset with seeds of its own, and the driver's learners end those copies' episodes in
flight as truncations (``Learner.end_workers``); what the dead runner held is lost, nothing
else (docs/results/ray.md).
"""

import math
import os
import subprocess
import sys
from dataclasses import asdict
from typing import Any

import numpy as np

from relayrl.arena.match import Match
from relayrl.arena.policy import Policy
from relayrl.arena.rollout import Rollout, env_check
from relayrl.core.device import configure_threads
from relayrl.core.errors import ConfigError, MissingExtraError
from relayrl.core.registry import Plugins
from relayrl.core.seeding import derive_seeds
from relayrl.envs.episodes import EpisodeStats
from relayrl.envs.registry import make_env_factory
from relayrl.envs.types import GroupObs
from relayrl.envs.vector_env import make_vector_env


def slices(num_envs: int, runners: int) -> list[tuple[int, int]]:
    """``(first copy, copies)`` of each runner: contiguous, sizes differing by at most one."""
    sizes = [num_envs // runners + (k < num_envs % runners) for k in range(runners)]
    firsts = np.cumsum([0, *sizes[:-1]])
    return [(int(f), s) for f, s in zip(firsts, sizes)]


def rotated(matches: list[Match], first: int) -> list[Match]:
    """The match list seen from copy ``first``: its copy i plays the run's copy ``first + i``'s."""
    return [matches[(first + i) % len(matches)] for i in range(len(matches))]


STARTUP_S = 120  # how long runners may wait for the cluster's CPUs before the run stops


class EnvRunner:
    """Copies ``first`` to ``first + copies - 1`` of a run (a Ray actor's state)."""

    def __init__(
        self, plugins: Plugins, env: str, settings: dict[str, Any], with_state: bool, vector: str, first: int, copies: int, matches: list[Match], policies: dict[str, Policy]
    ) -> None:
        self.refused = plugins.load()  # the envs, selection rules and algorithms the driver's modules registered
        if self.refused is None:
            configure_threads(1)
            self._open(env, settings, with_state, vector, first, copies, matches, policies)

    def _open(self, env: str, settings: dict[str, Any], with_state: bool, vector: str, first: int, copies: int, matches: list[Match], policies: dict[str, Policy]) -> None:
        self.venv = make_vector_env(make_env_factory(env, settings, with_state), copies, vector, first=first)
        self.first = first
        self.policies = policies
        self.rollout = Rollout(self.venv, policies, matches, None, env_check(self.venv.groups, first))

    def reopen(self, env: str, settings: dict[str, Any], with_state: bool, vector: str, first: int, copies: int, matches: list[Match], policies: dict[str, Policy]) -> None:
        """Closes its copies and opens the next round's (its env, matches and acting
        policies) in this process: a new runner would import torch again."""
        self.venv.close()
        self._open(env, settings, with_state, vector, first, copies, matches, policies)

    def ready(self) -> str | None:
        """None once its copies are open; else why they could not be (``Plugins.load``)."""
        return self.refused

    def node(self) -> str:
        """The id of the Ray node this runner runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def reset(self, seed: int, streams: dict[str, int] | None) -> None:
        """Resets the copies with ``seed``; ``streams``: a new seed for each policy's exploration."""
        for pid, stream in (streams or {}).items():
            rng = self.policies[pid].acting_rng
            if rng is not None:
                rng.bit_generator.state = np.random.default_rng(stream).bit_generator.state
        self.rollout.reset(seed)

    def collect(self, n_steps: int, env_steps: int, networks: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, np.ndarray]], EpisodeStats]:
        """Loads the learners' ``networks`` (their ``policy_state``), steps ``n_steps`` times."""
        for pid, state in networks.items():
            self.policies[pid].load_policy_state(state, "the driver")
        steps = self.rollout.collect(n_steps, env_steps)
        return steps, self._numbered(self.venv.drain_episodes())

    def cut_episodes(self) -> EpisodeStats:
        """Ends the copies' episodes in flight (a round's end): their returns so far."""
        return self._numbered(self.venv.cut_episodes())

    def _numbered(self, episodes: EpisodeStats) -> EpisodeStats:
        """``episodes`` with their copies numbered as the run numbers them."""
        episodes.copies = [self.first + c for c in episodes.copies]
        return episodes

    def get_state(self) -> dict[str, Any]:
        """The copies' env state (None where the env cannot save one), what the entities act
        on next, the recurrent carries and each policy's exploration stream."""
        rngs = {pid: p.acting_rng.bit_generator.state for pid, p in self.policies.items() if p.acting_rng is not None}
        observed = [asdict(seen) for seen in self.rollout.observed or []]
        return {"env": self.venv.get_state(), "observed": observed, "carry": self.rollout.carry, "rngs": rngs}

    def set_state(self, state: dict[str, Any]) -> bool:
        """Restores ``get_state``'s output; False where the env state cannot be restored
        (the exploration streams are, and the caller resets the copies)."""
        for pid, rng_state in state["rngs"].items():
            self.policies[pid].acting_rng.bit_generator.state = rng_state
        if state["env"] is None:
            return False
        self.venv.set_state(state["env"])
        self.rollout.observed = [GroupObs(**seen) for seen in state["observed"]]
        self.rollout.carry = state["carry"]
        return True

    def close(self) -> None:
        if self.refused is None:
            self.venv.close()


# Watches the driver; once it is gone (also by SIGKILL, which Ray cannot see coming), ends the
# Ray processes left in its process group (Ray's agents outlive a killed driver otherwise).
REAPER = """
import os, signal, sys, time
driver, group = int(sys.argv[1]), int(sys.argv[2])
while os.path.exists(f"/proc/{driver}"):
    time.sleep(1)
time.sleep(1)
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        name = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[0].decode(errors="replace")
        if os.getpgid(int(pid)) == group and (name.startswith("ray::") or "/ray/" in name):
            os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass
"""


def _reap_after_driver() -> None:
    """Starts the reaper of this driver's local Ray processes (Linux: it reads /proc)."""
    if os.path.isdir("/proc"):
        subprocess.Popen([sys.executable, "-c", REAPER, str(os.getpid()), str(os.getpgid(0))],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def start_ray(address: str | None, num_cpus: int | None) -> tuple[Any, bool]:
    """Ray, and whether this call started it: joined to ``address`` or started locally with
    ``num_cpus`` logical CPUs (workers at normal priority: Ray's default niceness 15
    starves them on a busy machine; measured 17x slower here); as it is where already
    initialised."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray") from None
    if ray.is_initialized():
        return ray, False
    if address is not None:
        ray.init(address=address, log_to_driver=False)
    else:
        # "local": a new instance of this process, even where a cluster started by `ray start`
        # (or by a test) runs on the machine, which ray.init would otherwise join
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, _system_config={"worker_niceness": 0})
        _reap_after_driver()
    return ray, True


REPLACEMENTS = 3  # new runners one call may take before the run stops


class RayRunners:
    """K ``EnvRunner`` actors over a run's copies, driven from the training process. A
    runner that dies (its process or node lost) is replaced by a new one over the same
    copies, reset afresh; ``collect`` and ``revive`` name the copies that restarted, so that
    the learners end those copies' episodes in flight."""

    def __init__(self, env: Any, with_state: bool, matches: list[Match], policies: dict[str, Policy], runners: int, address: str | None, runner_cpus: float, seed: int) -> None:
        self.plugins = Plugins.here()
        ray, _ = start_ray(address, max(os.cpu_count() or 1, math.ceil(runners * runner_cpus)))
        self.ray = ray
        self.need = f"backend.runners={runners} x runner_cpus={runner_cpus} needs {runners * runner_cpus:g} CPUs"
        self.slices = slices(env.num_envs, runners)
        self.policies = policies
        self.seed = seed  # replacements derive theirs from it
        self.actor = ray.remote(num_cpus=runner_cpus)(EnvRunner)
        self.arguments = (env.name, env.env_settings(), with_state, env.vector)
        self.matches = matches
        self.actors: list[Any] = []
        self.actors = [self._start(first, copies) for first, copies in self.slices]
        self._wait_ready(self.actors)

    def _start(self, first: int, copies: int) -> Any:
        return self.actor.remote(self.plugins, *self._arguments(first, copies))

    def _arguments(self, first: int, copies: int) -> tuple[Any, ...]:
        acting = {pid: p.acting_copy() for pid, p in self.policies.items()}
        return (*self.arguments, first, copies, rotated(self.matches, first), acting)

    def reopen(self, env: Any, with_state: bool, matches: list[Match]) -> bool:
        """The same runners over the next round's venue (its env settings, matches and the
        policies as they are now); False where its copies split otherwise (a new set of
        runners is due)."""
        if slices(env.num_envs, len(self.actors)) != self.slices:
            return False
        self.arguments = (env.name, env.env_settings(), with_state, env.vector)
        self.matches = matches
        try:
            self.ray.get([actor.reopen.remote(*self._arguments(first, copies)) for actor, (first, copies) in zip(self.actors, self.slices)])
        except self.ray.exceptions.RayActorError:
            return False  # a runner died between the rounds: new runners start over the venue
        return True

    def _wait_ready(self, actors: list[Any]) -> None:
        ready = [a.ready.remote() for a in actors]
        _, waiting = self.ray.wait(ready, num_returns=len(actors), timeout=STARTUP_S)
        if waiting:
            self.close()
            raise ConfigError(f"{len(waiting)} of {len(actors)} env runners did not start within {STARTUP_S} s: {self.need}; free CPUs of the cluster: "
                              f"{self.ray.available_resources().get('CPU', 0.0):g} (other actors hold the rest)")
        refused = [why for why in self.ray.get(ready) if why is not None]
        if refused:
            self.close()
            raise ConfigError(refused[0])

    def _replace(self, k: int, env_steps: int, error: Exception) -> tuple[int, int]:
        """A new runner for runner ``k``'s copies, with the policies as they are now, reset
        with seeds of its own; returns its copies (first, count)."""
        first, copies = self.slices[k]
        print(f"warning: env runner {k} (copies {first}-{first + copies - 1}) died by env step {env_steps:,} ({type(error).__name__}): "
              "a new one restarts its copies from new resets, and their episodes in flight end as truncations", file=sys.stderr)
        self.ray.kill(self.actors[k])
        self.actors[k] = self._start(first, copies)
        self._wait_ready([self.actors[k]])
        tag = f"runners/{k}/replaced at {env_steps}"
        streams = {pid: derive_seeds(self.seed, 1, f"{tag}/{pid}")[0] for pid, p in self.policies.items() if p.acting_rng is not None}
        self.ray.get(self.actors[k].reset.remote(derive_seeds(self.seed, 1, tag)[0], streams))
        return first, copies

    def _call(self, method: str, env_steps: int, *args: Any) -> tuple[list[Any], list[tuple[int, int]]]:
        """Every runner's ``method(*args)``; a runner that died is replaced and called again.
        Returns the results in runner order and the copies that restarted."""
        results: list[Any] = [None] * len(self.actors)
        calling: list[int] = list(range(len(self.actors)))
        restarted: list[tuple[int, int]] = []
        for _ in range(REPLACEMENTS + 1):
            refs = [getattr(self.actors[k], method).remote(*args) for k in calling]
            dead = []
            for k, ref in zip(calling, refs):
                try:
                    results[k] = self.ray.get(ref)
                except self.ray.exceptions.RayActorError as error:
                    dead.append((k, error))
            if not dead:
                return results, restarted
            restarted += [self._replace(k, env_steps, error) for k, error in dead]
            calling = [k for k, _ in dead]
        raise RuntimeError(f"env runners {calling} died {REPLACEMENTS + 1} times within one {method}: see the Ray logs (/tmp/ray/session_latest/logs)")

    def reset(self, seed: int) -> None:
        """One runner resets as the local backend does; K runners with K derived seeds and
        exploration streams."""
        k = len(self.actors)
        if k == 1:
            self.ray.get(self.actors[0].reset.remote(seed, None))
            return
        seeds = derive_seeds(seed, k, "runners")
        streams = {pid: derive_seeds(seed, k, f"runners/{pid}") for pid, p in self.policies.items() if p.acting_rng is not None}
        self.ray.get([a.reset.remote(seeds[i], {pid: s[i] for pid, s in streams.items()}) for i, a in enumerate(self.actors)])

    def collect(
        self, n_steps: int, env_steps: int, networks: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, dict[str, np.ndarray]], EpisodeStats, list[tuple[int, int]]]:
        """Every runner's ``n_steps`` steps after loading the learners' acting ``networks``
        (by policy), joined along the worker axis in copy order; the finished episodes in
        runner order; the copies (first, count) that restarted because their runner died."""
        networks = self.ray.put(networks)
        results, restarted = self._call("collect", env_steps, n_steps, env_steps, networks)
        joined: dict[str, dict[str, list[np.ndarray]]] = {}
        for steps, _ in results:
            for pid, fields in steps.items():
                for name, value in fields.items():
                    joined.setdefault(pid, {}).setdefault(name, []).append(value)
        fragments = {pid: {name: np.concatenate(parts, axis=1) for name, parts in fields.items()} for pid, fields in joined.items()}
        return fragments, EpisodeStats.joined([stats for _, stats in results]), restarted

    def cut_episodes(self) -> EpisodeStats:
        """Every runner's episodes in flight, ended (a round's end), in runner order."""
        return EpisodeStats.joined(self.ray.get([a.cut_episodes.remote() for a in self.actors]))

    def revive(self, env_steps: int) -> list[tuple[int, int]]:
        """Replaces the runners that died since the last call; returns their copies."""
        return self._call("ready", env_steps)[1]

    def get_state(self) -> list[dict[str, Any]]:
        return self.ray.get([a.get_state.remote() for a in self.actors])

    def set_state(self, states: list[dict[str, Any]]) -> bool:
        """Restores every runner (the same number as saved); False where an env state
        could not be restored."""
        return all(self.ray.get([a.set_state.remote(s) for a, s in zip(self.actors, states)]))

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.get(actor.close.remote())
            except self.ray.exceptions.RayActorError:
                pass  # it died: nothing of it to close
            self.ray.kill(actor)
        self.actors = []
