"""E copies of an environment stepped together, with auto-reset and episode bookkeeping."""

import inspect
import multiprocessing as mp
import pickle
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from relayrl.core.errors import ConfigError, EnvError
from relayrl.core.seeding import derive_seeds
from relayrl.core.specs import GroupSpec
from relayrl.envs.episodes import EpisodeStats, EpisodeTally
from relayrl.envs.types import GroupObs, GroupStep, join
from relayrl.envs.registry import EnvFactory


class VectorEnv(Protocol):
    groups: tuple[GroupSpec, ...]
    num_envs: int
    # whether each entity runs episodes of its own (K copies of a single-agent env) rather
    # than one episode per copy shared by its entities
    independent_episodes: bool

    def reset(self, seed: int) -> list[GroupObs]: ...
    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]: ...
    def drain_episodes(self) -> EpisodeStats: ...  # the episodes that ended since the last call
    def cut_episodes(self) -> EpisodeStats: ...  # ends the episodes in flight (a round's end): their returns so far
    def get_state(self) -> dict[str, Any] | None: ...  # as data; None where episodes cannot be saved
    def set_state(self, state: dict[str, Any]) -> None: ...
    def close(self) -> None: ...
    # where the env can draw: render(game) -> [H, W, 3] uint8, copy ``game`` as it stands (relayrl.envs.frames)


class SyncVectorEnv:
    """E copies in this process. ``reset(seed)`` gives copy e the seed ``derive_seeds(seed, E)[e]``;
    later episodes continue each copy's own RNG, so a run is reproducible from its seed."""

    independent_episodes = False

    def __init__(self, factory: EnvFactory, num_envs: int, first: int = 0) -> None:
        self.factory = factory
        self.num_envs = num_envs
        self.first = first  # the run's number of copy 0 here (one worker's share of a run's copies), for messages
        self.envs = [factory.adapter() for _ in range(num_envs)]
        self.groups = self.envs[0].groups
        self.tally = EpisodeTally(num_envs, len(self.groups))

    def reset(self, seed: int) -> list[GroupObs]:
        return self.reset_with_seeds(derive_seeds(seed, self.num_envs, "env"))

    def reset_with_seeds(self, seeds: list[int]) -> list[GroupObs]:
        per_env = [env.reset(seed=s) for env, s in zip(self.envs, seeds)]
        self.tally.clear()
        return [join([first[g] for first in per_env], np.stack) for g in range(len(self.groups))]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[g]`` is ``[E, N_g]``. Returns per-group steps and ``episode_over [E]``.
        Copies whose episode ended are reset; their ``next_obs`` keeps the final observation."""
        per_env = []
        over = np.zeros(self.num_envs, bool)
        rewards = np.zeros((self.num_envs, len(self.groups)))
        for e, env in enumerate(self.envs):
            try:
                steps, done = env.step([a[e] for a in actions])
            except EnvError as error:
                raise EnvError(f"env copy {self.first + e}: {error}") from error.__cause__
            rewards[e] = [s.reward.sum() for s in steps]
            if done:
                over[e] = True
                for s, first in zip(steps, env.reset()):
                    s.set_observed(first)
            per_env.append(steps)
        self.tally.add(rewards, over)
        return [join([steps[g] for steps in per_env], np.stack) for g in range(len(self.groups))], over

    def drain_episodes(self) -> EpisodeStats:
        return self.tally.drain()

    def cut_episodes(self) -> EpisodeStats:
        return self.tally.cut()

    def render(self, game: int) -> np.ndarray:
        """Copy ``game``'s frame (its factory made with ``render_mode="rgb_array"``)."""
        return self.envs[game].render()

    def get_state(self) -> dict[str, Any] | None:
        """Every copy's episode in flight and the episode accumulators, as data; None where
        the env cannot save its state (``ParallelEnvAdapter.get_state``)."""
        copies = [env.get_state() for env in self.envs]
        if any(c is None for c in copies):
            return None
        return {"copies": copies, **self.tally.state_dict()}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["copies"]) != self.num_envs:
            raise ValueError(f"the state holds {len(state['copies'])} env copies, this run has {self.num_envs}")
        for env, copy_state in zip(self.envs, state["copies"]):
            env.set_state(copy_state)
        self.tally.load_state_dict(state)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _worker(conn, factory: EnvFactory, num_envs: int, first: int) -> None:
    """Serves one SyncVectorEnv; replies ``("ok", result)`` or ``("error", traceback)``, so an
    exception in the env reaches the main process with its message and traceback."""
    venv = None
    try:
        venv = SyncVectorEnv(factory, num_envs, first)
    except Exception:
        failure = traceback.format_exc()
    try:
        while True:
            command, payload = conn.recv()
            if command == "close":
                break
            if venv is None:
                conn.send(("error", failure))
                continue
            try:
                conn.send(("ok", getattr(venv, command)(*payload)))
            except EnvError as error:  # the env's own failure, already named
                conn.send(("error", str(error)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        if venv is not None:
            venv.close()
        conn.close()


def _script_hint() -> str:
    """Why a worker of a user's script may exit at once: worker processes import the script
    that started them, and one without a main guard starts its run again in each worker."""
    script = getattr(sys.modules["__main__"], "__file__", None)
    if script is None or Path(script).resolve().is_relative_to(Path(__file__).resolve().parents[1]):
        return ""
    return (f". Worker processes import {Path(script).name}: if it starts the run at import, put that under "
            "`if __name__ == \"__main__\":` (or set env.vector=sync)")


class SubprocVectorEnv:
    """E copies spread over worker processes (each a SyncVectorEnv), for slow envs.

    Copy e gets the same seed as in SyncVectorEnv, so both variants produce the same data.
    """

    independent_episodes = False

    def __init__(self, factory: EnvFactory, num_envs: int, num_workers: int = 2, first: int = 0) -> None:
        self.num_envs = num_envs
        num_workers = max(1, min(num_workers, num_envs))
        self._sizes = [len(c) for c in np.array_split(np.arange(num_envs), num_workers)]
        try:  # the workers receive the factory by pickle: say so before they fail to start
            pickle.dumps(factory)
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            raise ConfigError(
                f"env.vector=subproc sends the env's factory to worker processes, and it does not pickle ({error}): make the "
                "function that builds the env a module-level function (not a lambda or a function defined inside another), or set env.vector=sync"
            ) from None
        ctx = mp.get_context("spawn")
        self._conns, self._procs = [], []
        for size, offset in zip(self._sizes, np.cumsum([0, *self._sizes[:-1]])):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, factory, size, first + int(offset)), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        self.groups = factory.adapter().groups

    def _call(self, command: str, payloads: list[tuple]) -> list:
        for conn, payload in zip(self._conns, payloads):
            conn.send((command, payload))
        replies, failures = [], []
        for k, (conn, proc) in enumerate(zip(self._conns, self._procs)):
            try:
                status, value = conn.recv()
            except (EOFError, ConnectionResetError):
                proc.join(timeout=5)
                failures.append(f"env worker {k} (pid {proc.pid}) exited during {command} with code {proc.exitcode}{_script_hint()}")
                continue
            if status == "error":
                failures.append(f"env worker {k} raised during {command}:\n{value.rstrip()}")
            replies.append(value)
        if failures:  # every reply was read first, so the other workers can still be closed
            raise EnvError("\n".join(failures))
        return replies

    def _split(self, actions: list[np.ndarray]) -> list[tuple]:
        bounds = np.cumsum([0, *self._sizes])
        return [([a[lo:hi] for a in actions],) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def reset(self, seed: int) -> list[GroupObs]:
        seeds = derive_seeds(seed, self.num_envs, "env")
        bounds = np.cumsum([0, *self._sizes])
        results = self._call("reset_with_seeds", [(seeds[lo:hi],) for lo, hi in zip(bounds[:-1], bounds[1:])])
        return [join([r[g] for r in results], np.concatenate) for g in range(len(self.groups))]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        results = self._call("step", self._split(actions))
        steps = [join([r[0][g] for r in results], np.concatenate) for g in range(len(self.groups))]
        return steps, np.concatenate([r[1] for r in results])

    def drain_episodes(self) -> EpisodeStats:
        return self._merged("drain_episodes")

    def cut_episodes(self) -> EpisodeStats:
        return self._merged("cut_episodes")

    def _merged(self, command: str) -> EpisodeStats:
        """Every worker's episodes, its copies numbered as the run numbers them."""
        first_copy = np.cumsum([0, *self._sizes])
        parts = self._call(command, [()] * len(self._conns))
        return EpisodeStats.joined([replace(stats, copies=[int(first) + e for e in stats.copies]) for stats, first in zip(parts, first_copy)])

    def get_state(self) -> dict[str, Any] | None:
        states = self._call("get_state", [()] * len(self._conns))
        return None if any(s is None for s in states) else {"workers": states}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["workers"]) != len(self._conns):
            raise ValueError(f"the state holds {len(state['workers'])} env workers, this run has {len(self._conns)}")
        self._call("set_state", [(s,) for s in state["workers"]])

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("close", ()))
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)


def make_vector_env(factory: EnvFactory, num_envs: int, kind: str = "sync", num_workers: int = 2, first: int = 0) -> VectorEnv:
    """The factory's batched implementation where it has one, else E copies in this
    process (``sync``) or in worker processes (``subproc``); ``first``: the run's number of
    the first of them (a Ray runner's share), for messages."""
    if factory.vectorised is not None:
        if kind != "sync":
            raise ValueError(f"this environment is vectorised in-process; vector={kind!r} applies to per-copy envs only")
        drawn = {"render_mode": factory.render_mode} if factory.render_mode and "render_mode" in inspect.signature(factory.vectorised).parameters else {}
        return factory.vectorised(num_envs, **factory.settings, **drawn)
    if kind == "sync":
        return SyncVectorEnv(factory, num_envs, first)
    if kind == "subproc":
        return SubprocVectorEnv(factory, num_envs, num_workers, first)
    raise ValueError(f"unknown vector env kind {kind!r}; use 'sync' or 'subproc'")
