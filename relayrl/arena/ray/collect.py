"""A run's env copies stepped by Ray env runners (``runners.py``), behind the ``Collector``
protocol (``relayrl.arena.collect``).

Runners start with acting copies of the policies as they are when the venue's copies are
reset or restored, and get the learners' acting networks after every fragment (``sync``).
At a round's start the same runners take the round's venue and acting copies (once its
schemes and hooks have run) in their processes. With one runner a run equals the
local collector's for the same seed: its copies reset with the run's seed, its policies
continue the driver's exploration streams, and when it stops the driver's policies take the
streams back, so the next runners continue them.
"""

from typing import Any

import numpy as np

from relayrl.arena.collect import ActingStates, Collected, Venue, restarted_workers
from relayrl.arena.policy import Policy
from relayrl.arena.ray.runners import RayRunners
from relayrl.envs.episodes import EpisodeStats


class RayCollector:
    """``runners`` Ray actors over the venue's copies (``backend.runners``, each reserving
    ``runner_cpus``), on the cluster at ``address`` (None: the local one)."""

    def __init__(self, policies: dict[str, Policy], runners: int, address: str | None, runner_cpus: float, seed: int) -> None:
        self.policies = policies
        self.n_runners, self.address, self.runner_cpus, self.seed = runners, address, runner_cpus, seed
        self.venue: Venue | None = None
        self.runners: RayRunners | None = None
        self.networks: dict[str, dict[str, Any]] = {}  # the learners' acting networks for the next fragment
        self.on_venue = False  # the runners play the venue (False: the last one's, until a reset or restore)

    def open(self, venue: Venue) -> None:
        """Plays ``venue`` from the next reset or restore on, with the same runners where its
        copies split as the last venue's did."""
        self._take_streams()
        self.venue = venue
        self.on_venue = False

    def _start(self) -> RayRunners:
        """The runners over the venue, with the policies as they are now."""
        assert self.venue is not None, "open a venue first"
        self.networks = {}
        if self.runners is not None and not self.runners.reopen(self.venue.env, self.venue.factory.with_state, self.venue.matches):
            self.runners.close()  # their streams were taken at ``open``
            self.runners = None
        if self.runners is None:
            self.runners = RayRunners(self.venue.env, self.venue.factory.with_state, self.venue.matches, self.policies, self.n_runners, self.address, self.runner_cpus, self.seed)
        self.on_venue = True
        return self.runners

    def reset(self, seed: int) -> None:
        (self.runners if self.runners is not None and self.on_venue else self._start()).reset(seed)

    def collect(self, n_steps: int, env_steps: int) -> Collected:
        assert self.runners is not None and self.venue is not None, "reset or load the collector first"
        steps, episodes, restarted = self.runners.collect(n_steps, env_steps, self.networks)
        return Collected(steps, episodes, n_steps * self.venue.venv.num_envs, restarted_workers(self.venue, restarted))

    def cut_episodes(self) -> EpisodeStats:
        assert self.runners is not None, "reset or load the collector first"
        return self.runners.cut_episodes()

    def sync(self, learners: ActingStates) -> None:
        self.networks = learners.acting_states()

    def revive(self, env_steps: int) -> dict[str, np.ndarray]:
        """Replaces runners that died since the last fragment (a checkpoint's episodes in
        flight on their copies end first)."""
        if self.runners is None or self.venue is None:
            return {}
        return restarted_workers(self.venue, self.runners.revive(env_steps))

    def state_dict(self) -> dict[str, Any]:
        assert self.runners is not None
        return {"env": None, "observed": [], "carry": {}, "runners": self.runners.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> str | None:
        saved = state["runners"]
        runners = self._start()
        if len(saved) == self.n_runners and runners.set_state(saved):
            return None
        return f"the runners' env states of this checkpoint cannot be restored ({len(saved)} saved for {self.n_runners} runners)"

    def _take_streams(self) -> None:
        """With one runner, the driver's policies take over its exploration streams (so that
        the runners' next policies continue them, as the local collector's do)."""
        if self.runners is not None and len(self.runners.actors) == 1:
            (state,) = self.runners.get_state()
            for pid, rng_state in state["rngs"].items():
                self.policies[pid].acting_rng.bit_generator.state = rng_state

    def _stop(self) -> None:
        """Closes the runners, their exploration streams taken over first."""
        if self.runners is None:
            return
        self._take_streams()
        self.runners.close()
        self.runners, self.on_venue = None, False

    def close(self) -> None:
        self._stop()
