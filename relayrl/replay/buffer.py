"""P independent ring replay buffers, uniform or proportional prioritized, in one set of arrays.

Every field is one preallocated array ``[P, stride, *shape]`` (``stride >= capacity``) so that
add / sample / update_priorities are single vectorised calls over all P buffers: rows are
addressed by flat index ``p * stride + slot`` and gathered with one ``take`` per field.

Prioritized replay is the proportional variant of Schaul et al. 2016, "Prioritized Experience
Replay" (Alg. 1, Sec. 3.3-3.4): stored priority ``(|delta| + eps) ** alpha``, sampling
probability ``P(i) = p_i / sum_k p_k`` and importance weight ``(N * P(i)) ** -beta`` divided by
its maximum over the buffer, i.e. ``(p_i / min_k p_k) ** -beta``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.replay.sum_tree import SumTree

__all__ = ["FieldSpec", "ReplayBuffer", "SampledBatch"]


@dataclass(frozen=True)
class FieldSpec:
    """Per-transition shape and storage dtype of one field (e.g. ``(7, 7, 3)``, ``uint8``)."""

    shape: tuple[int, ...]
    dtype: np.dtype | str


@dataclass
class SampledBatch:
    """One batch per buffer: ``data[f]`` is [P, B, *shape], ``indices``/``weights`` are [P, B]."""

    data: dict[str, np.ndarray]
    indices: np.ndarray
    weights: np.ndarray


class ReplayBuffer:
    """P ring buffers of ``capacity`` transitions each, sharing one field layout."""

    def __init__(
        self,
        n_buffers: int,
        capacity: int,
        fields: dict[str, FieldSpec],
        *,
        prioritized: bool = False,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        seed: int | None = None,
    ) -> None:
        if n_buffers < 1 or capacity < 1:
            raise ValueError(f"need n_buffers >= 1 and capacity >= 1, got {n_buffers}, {capacity}")
        if not fields:
            raise ValueError("need at least one field")
        if prioritized and (alpha < 0 or beta < 0 or eps < 0):
            raise ValueError(f"need alpha, beta, eps >= 0, got {alpha}, {beta}, {eps}")
        self.n_buffers = n_buffers
        self.capacity = capacity
        self.fields = {name: FieldSpec(tuple(s.shape), np.dtype(s.dtype)) for name, s in fields.items()}
        self.prioritized = prioritized
        self.alpha = alpha
        self.beta = beta
        self.eps = eps
        self._rng = np.random.default_rng(seed)
        self._tree = SumTree(n_buffers, capacity) if prioritized else None
        # PER rows share the tree's leaf numbering, so a sampled leaf is already a row index.
        self._stride = self._tree.leaves_per_tree if self._tree is not None else capacity
        self._store = {
            name: np.zeros((n_buffers, self._stride, *s.shape), dtype=s.dtype) for name, s in self.fields.items()
        }
        self._flat = {name: a.reshape(n_buffers * self._stride, *a.shape[2:]) for name, a in self._store.items()}
        self._ptr = np.zeros(n_buffers, dtype=np.int64)
        self._size = np.zeros(n_buffers, dtype=np.int64)
        self._max_priority = np.ones(n_buffers, dtype=np.float64)
        self._row_offset = np.arange(n_buffers, dtype=np.int64)[:, None] * self._stride

    # ------------------------------------------------------------------ state
    @property
    def size(self) -> np.ndarray:
        """[P] number of filled slots per buffer."""
        return self._size.copy()

    def max_priority(self) -> np.ndarray:
        """[P] largest raw priority seen so far per buffer (1.0 before any), as PER inserts with."""
        return self._max_priority.copy()

    def storage(self) -> dict[str, np.ndarray]:
        """Read-only views ``[P, capacity, *shape]`` of the stored fields (slot order, not age)."""
        views = {}
        for name, a in self._store.items():
            view = a[:, : self.capacity]
            view.flags.writeable = False
            views[name] = view
        return views

    def priorities(self) -> np.ndarray:
        """[P, capacity] stored priorities ``(p + eps) ** alpha`` (0 for empty slots)."""
        if self._tree is None:
            raise ValueError("priorities() needs prioritized=True")
        return self._tree.leaves()[:, : self.capacity].copy()

    # ------------------------------------------------------------------ add
    def add(
        self,
        data: dict[str, np.ndarray],
        mask: np.ndarray | None = None,
        priorities: np.ndarray | None = None,
    ) -> None:
        """Append rows at each buffer's ring pointer (wrap-around overwrites the oldest).

        ``data[f]`` is [P, M, *shape] (row m of buffer p goes to buffer p) or [M, *shape] (the
        same M rows offered to every buffer, as experience relay does). ``mask`` [P, M] picks
        the rows each buffer stores (None = all), in order. ``priorities`` [P, M] are raw
        |td|-like values stored as ``(p + eps) ** alpha``; None inserts at the buffer's max
        priority, as PER does for fresh transitions.
        """
        arrays, n_rows = self._check_data(data)
        if n_rows == 0:
            return
        p_count, cap = self.n_buffers, self.capacity
        if priorities is not None:
            if self._tree is None:
                raise ValueError("priorities given to a buffer built with prioritized=False")
            priorities = self._check_priorities(priorities, (p_count, n_rows))
        if mask is None:
            # More rows than slots: only the last `cap` survive, so write only those.
            first = max(0, n_rows - cap)
            pos = self._ptr[:, None] + np.arange(first, n_rows)
            pos %= cap
            pos += self._row_offset
            for name, a in arrays.items():
                if first:
                    a = a[(slice(None),) * (a.ndim - len(self.fields[name].shape) - 1) + (slice(first, None),)]
                self._flat[name][pos] = a
            counts = n_rows
            if self._tree is not None:
                if priorities is None:
                    stored = np.broadcast_to(self._stored_max()[:, None], pos.shape)
                else:
                    priorities = priorities[:, first:]
                    stored = self._stored(priorities)
                    np.maximum(self._max_priority, priorities.max(axis=1), out=self._max_priority)
                self._tree.update_flat(pos.ravel(), stored.ravel())
        else:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (p_count, n_rows):
                raise ValueError(f"mask: expected shape {(p_count, n_rows)}, got {mask.shape}")
            rank = mask.cumsum(axis=1)
            counts = rank[:, -1].copy()
            rank -= 1
            if counts.max() > cap:
                mask = mask & (rank >= counts[:, None] - cap)
            buf, row = np.nonzero(mask)
            pos = (self._ptr[buf] + rank[buf, row]) % cap + self._row_offset[buf, 0]
            for name, a in arrays.items():
                self._flat[name][pos] = a[row] if a.ndim == len(self.fields[name].shape) + 1 else a[buf, row]
            if self._tree is not None:
                if priorities is None:
                    stored = self._stored_max()[buf]
                else:
                    stored = self._stored(priorities[buf, row])
                    kept_max = priorities.max(axis=1, where=mask, initial=0.0)
                    np.maximum(self._max_priority, kept_max, out=self._max_priority)
                self._tree.update_flat(pos, stored)
        self._ptr += counts
        self._ptr %= cap
        self._size += counts
        np.minimum(self._size, cap, out=self._size)

    def _check_data(self, data: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
        """Validate field names and shapes; returns the arrays and the row count M."""
        if data.keys() != self.fields.keys():
            raise ValueError(f"add: expected fields {sorted(self.fields)}, got {sorted(data)}")
        arrays: dict[str, np.ndarray] = {}
        n_rows = -1
        for name, spec in self.fields.items():
            a = np.asarray(data[name])
            nd = len(spec.shape)
            if a.shape[a.ndim - nd :] != spec.shape or a.ndim not in (nd + 1, nd + 2):
                raise ValueError(f"add: field {name!r} has shape {a.shape}, expected [P, M, *{spec.shape}] or [M, *{spec.shape}]")
            if a.ndim == nd + 2 and a.shape[0] != self.n_buffers:
                raise ValueError(f"add: field {name!r} has {a.shape[0]} buffers, expected {self.n_buffers}")
            m = a.shape[a.ndim - nd - 1]
            if n_rows not in (-1, m):
                raise ValueError(f"add: field {name!r} has {m} rows, other fields have {n_rows}")
            n_rows = m
            arrays[name] = a
        return arrays, n_rows

    # ------------------------------------------------------------------ sample
    def sample(self, batch_size: int) -> SampledBatch:
        """``batch_size`` rows per buffer, with replacement, independently per buffer.

        Uniform, or proportional PER: P(i) = p_i / sum_k p_k over stored priorities and
        weights ``(size * P(i)) ** -beta / max_j w_j = (p_i / min_k p_k) ** -beta`` (the max
        over the whole buffer, as in Schaul et al. 2016 and RLlib).
        """
        if batch_size < 1:
            raise ValueError(f"sample: batch_size must be >= 1, got {batch_size}")
        if not self._size.all():
            raise ValueError(f"sample: buffers {np.flatnonzero(self._size == 0).tolist()} are empty")
        u = self._rng.random((self.n_buffers, batch_size))
        if self._tree is None:
            # floor(u * n) < n for every u < 1 and n < 2**53, so no clipping is needed.
            u *= self._size[:, None]
            slots = u.astype(np.int64)
            weights = np.ones((self.n_buffers, batch_size), dtype=np.float32)
        else:
            u *= self._tree.total()[:, None]
            slots, prio = self._tree.find_prefix_sum(u, return_values=True)
            prio /= self._tree.min()[:, None]
            weights = np.power(prio, -self.beta, dtype=np.float32)
        rows = slots + self._row_offset
        data = {name: flat.take(rows, axis=0) for name, flat in self._flat.items()}
        return SampledBatch(data=data, indices=slots, weights=weights)

    # ------------------------------------------------------------------ priorities
    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set raw priorities (|td|, non-negative) of sampled slots ``indices`` [P, B].

        Duplicate indices are allowed (the last write wins). Also raises the max priority.
        """
        if self._tree is None:
            raise ValueError("update_priorities needs prioritized=True")
        indices = np.asarray(indices)
        if indices.ndim != 2 or indices.shape[0] != self.n_buffers:
            raise ValueError(f"update_priorities: indices must be [P={self.n_buffers}, B], got {indices.shape}")
        priorities = self._check_priorities(priorities, indices.shape)
        if not ((indices >= 0).all() and (indices < self._size[:, None]).all()):
            raise ValueError("update_priorities: an index is negative or not a filled slot")
        self._tree.update_flat((indices + self._row_offset).ravel(), self._stored(priorities).ravel())
        np.maximum(self._max_priority, priorities.max(axis=1), out=self._max_priority)

    def _check_priorities(self, priorities: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        priorities = np.asarray(priorities, dtype=np.float64)
        if priorities.shape != shape:
            raise ValueError(f"priorities: expected shape {shape}, got {priorities.shape}")
        if not (priorities >= 0).all():  # also catches NaN
            raise ValueError("priorities must be non-negative and not NaN")
        return priorities

    def _stored(self, raw: np.ndarray) -> np.ndarray:
        """Stored priority (raw + eps) ** alpha (Schaul et al. 2016, Sec. 3.3)."""
        return np.power(raw + self.eps, self.alpha)

    def _stored_max(self) -> np.ndarray:
        return self._stored(self._max_priority)

    # ------------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict[str, Any]:
        """Copies of contents, pointers, sizes, priorities and RNG state; see load_state_dict."""
        state: dict[str, Any] = {
            "n_buffers": self.n_buffers,
            "capacity": self.capacity,
            "fields": {name: {"shape": s.shape, "dtype": np.dtype(s.dtype).str} for name, s in self.fields.items()},
            "prioritized": self.prioritized,
            "alpha": self.alpha,
            "beta": self.beta,
            "eps": self.eps,
            "data": {name: a[:, : self.capacity].copy() for name, a in self._store.items()},
            "ptr": self._ptr.copy(),
            "size": self._size.copy(),
            "max_priority": self._max_priority.copy(),
            "rng_state": self._rng.bit_generator.state,
        }
        if self._tree is not None:
            state["tree"] = self._tree.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict from a buffer of the same shape; later samples are identical."""
        fields = {name: {"shape": s.shape, "dtype": np.dtype(s.dtype).str} for name, s in self.fields.items()}
        saved = {name: {"shape": tuple(f["shape"]), "dtype": np.dtype(f["dtype"]).str} for name, f in state["fields"].items()}
        layout = (self.n_buffers, self.capacity, fields, self.prioritized)
        if (state["n_buffers"], state["capacity"], saved, state["prioritized"]) != layout:
            raise ValueError("load_state_dict: the state comes from a buffer with a different layout")
        for name, a in self._store.items():
            a[:, : self.capacity] = state["data"][name]
        self._ptr[:] = state["ptr"]
        self._size[:] = state["size"]
        self._max_priority[:] = state["max_priority"]
        self.alpha, self.beta, self.eps = state["alpha"], state["beta"], state["eps"]
        self._rng.bit_generator.state = state["rng_state"]
        if self._tree is not None:
            self._tree.load_state_dict(state["tree"])
