"""What every learner shares besides its contract (``relayrl.algos.algorithm.Learner``): the
update metrics between two reports, and the policy file a checkpoint keeps."""

import math
from dataclasses import dataclass, field
from typing import Any

from relayrl.sharing.selectors import Selector


@dataclass
class MetricWindow:
    """A learner's update metrics between two reports: sums and counts per metric (an
    actor loss, say, comes every ``policy_delay`` updates only)."""

    updates: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.sums[key] = self.sums.get(key, 0.0) + value
            self.counts[key] = self.counts.get(key, 0) + 1

    def mean(self, key: str) -> float:
        return self.sums[key] / self.counts[key] if self.counts.get(key) else math.nan


class LearnerReports:
    """``window`` (the metrics since the last report), ``policy_state`` and the exploration
    at an env step for a learner with ``algo``, ``settings`` and ``algorithm``.
    ``exploration_scale`` multiplies the algorithm's schedule (epsilon, or the action
    noise): 1 unless a scheme such as population-based training changes it. ``selector``:
    the sharing's selection rule where the learner relays (SUPER), else None."""

    window: MetricWindow
    algo: str
    settings: Any
    algorithm: Any
    exploration_scale: float = 1.0
    selector: Selector | None = None
    exports: bool = False  # whether it relays to other learners (``relay.between``; off-policy learners only)

    # what acting reads (``act`` of every learner): an env runner's copy keeps these only
    ACTING_PARTS = ("spec", "name", "algo", "settings", "algorithm", "layout", "exploration_scale")

    def acting_copy(self) -> "LearnerReports":
        """This learner without its replay, sharing and counters: its ``act`` only, sharing
        the networks (an env runner in another process receives a pickled copy)."""
        clone = object.__new__(type(self))
        clone.__dict__.update({key: value for key, value in vars(self).items() if key in self.ACTING_PARTS})
        return clone

    def exploration(self, env_steps: int) -> float:
        return self.algorithm.exploration(env_steps) * self.exploration_scale

    def drain_window(self) -> MetricWindow:
        window, self.window = self.window, MetricWindow()
        return window

    def policy_state(self) -> dict[str, Any]:
        """What acting needs: the algorithm's acting networks and how they map to entities."""
        return {"algo": self.algo, "param_sharing": self.settings.param_sharing, "networks": self.algorithm.policy_state()}
