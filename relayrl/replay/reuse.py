"""AccMER's reuse sampler (paper 002, Algorithm 1; SPEC §1.3).

A weight table ``W`` over the replay's slots (one per stored episode or transition, the
same initial value for all). Every ``period`` updates (default floor(d / b): d the replay's
capacity, b the batch size) the ``alpha * b`` filled slots of largest weight become the
reuse set S- (a partial selection, no full sort); every batch is S- plus ``(1 - alpha) * b``
slots drawn uniformly, without replacement, from the filled slots outside S- (S+). After the
update each sampled slot's own weight (MAC-PO's, Lemma 1) is written into W at that slot and
all of W decays by ``decay``. ``alpha = 0`` is uniform sampling, ``alpha = 1`` reuses only.

Where the reference code departs from this (alpha and decay fixed, a full sort per call, a
batch-mean weight written into consecutive slots, no period): docs/results/accmer.
"""

from typing import Any

import numpy as np


def largest(weights: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` slots of largest weight in slot order, ties going to the lower slot, by one
    partial selection. ``np.argpartition`` alone leaves the order of its top ``k``, and which
    of several equal weights make it, to the SIMD path NumPy takes on the CPU at hand, and the
    batch's order changes the float sums of the update: this way a run gives the same numbers
    on every machine."""
    if k >= weights.size:
        return np.arange(weights.size)
    if k <= 0:
        return np.zeros(0, np.int64)
    bar = -np.partition(-weights, k - 1)[k - 1]  # the k-th largest weight
    above = weights > bar
    at = np.flatnonzero(weights == bar)[: k - int(above.sum())]
    above[at] = True
    return np.flatnonzero(above)


class ReuseSampler:
    def __init__(
        self,
        capacity: int,
        batch_size: int,
        alpha: float = 0.5,
        decay: float = 1.0,
        period: int | None = None,
        initial_weight: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"the reuse ratio alpha must be in [0, 1], got {alpha}")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"the weight decay must be in (0, 1], got {decay}")
        if batch_size < 1 or capacity < batch_size:
            raise ValueError(f"need 1 <= batch_size <= capacity, got {batch_size} and {capacity}")
        self.capacity = capacity
        self.batch_size = batch_size
        self.n_reused = int(round(alpha * batch_size))
        self.decay = decay
        self.period = period if period is not None else max(1, capacity // batch_size)
        if self.period < 1:
            raise ValueError(f"the reuse period must be >= 1, got {self.period}")
        self.initial_weight = initial_weight
        self.weights = np.full(capacity, initial_weight, np.float64)
        self.reused = np.zeros(0, np.int64)  # S-
        self.since_refresh = 0
        self.rng = np.random.default_rng(seed)

    def written(self, slots: np.ndarray) -> None:
        """Slots that received new data start at the initial weight."""
        self.weights[slots] = self.initial_weight

    def sample(self, size: int) -> np.ndarray:
        """Slot indices ``[b]`` of the next batch from the first ``size`` (filled) slots:
        S- (refreshed every ``period`` calls) then S+."""
        if size < self.batch_size:
            raise ValueError(f"the replay holds {size} items, fewer than a batch of {self.batch_size}")
        if self.since_refresh % self.period == 0 or self.reused.size != self.n_reused:
            k = self.n_reused
            self.reused = largest(self.weights[:size], k)
            self.since_refresh = 0
        self.since_refresh += 1
        outside = np.ones(size, bool)
        outside[self.reused] = False
        fresh = self.rng.choice(np.flatnonzero(outside), self.batch_size - self.n_reused, replace=False)
        return np.concatenate([self.reused, fresh])

    def update(self, slots: np.ndarray, weights: np.ndarray) -> None:
        """Writes each sampled slot's own weight, then decays the whole table."""
        self.weights[slots] = weights
        if self.decay != 1.0:
            self.weights *= self.decay

    def state_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "reused": self.reused, "since_refresh": self.since_refresh, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.weights, self.reused = np.array(state["weights"]), np.array(state["reused"])
        self.since_refresh = int(state["since_refresh"])
        self.rng.bit_generator.state = state["rng"]
