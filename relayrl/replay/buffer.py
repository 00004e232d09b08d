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

from relayrl.core.stored_array import fill
from relayrl.replay.sum_tree import SumTree

__all__ = ["FieldSpec", "ReplayBuffer", "ReplayPlan", "SampledBatch", "row_nbytes"]

_UNIFORM_BLOCK = 16_384
# the key of the stored rows in a buffer's state: a resume streams what is below it from the
# checkpoint's file into the buffer (``relayrl.core.stored_array``), holding one copy, not two
ROWS = "data"


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


def row_nbytes(fields: dict[str, FieldSpec]) -> int:
    """Bytes of one stored transition."""
    return sum(int(np.prod(f.shape, dtype=np.int64)) * np.dtype(f.dtype).itemsize for f in fields.values())


@dataclass(frozen=True)
class ReplayPlan:
    """A replay's layout, known before anything is allocated: a run sizes its memory (and
    its checkpoints) from the plans of its learners, then builds the buffers from them."""

    n_buffers: int
    capacity: int
    fields: dict[str, FieldSpec]
    prioritized: bool = False

    def nbytes(self, rows: int | None = None) -> int:
        """Memory of the buffers; with ``rows``, what they take once that many rows of each
        are written (the arrays are zeroed lazily: pages no row reaches stay unallocated)."""
        if rows is None or rows >= self.capacity:
            return ReplayBuffer.planned_nbytes(self.n_buffers, self.capacity, self.fields, self.prioritized)
        return self.n_buffers * rows * row_nbytes(self.fields) + (SumTree.planned_nbytes(self.n_buffers, self.capacity) if self.prioritized else 0)

    def checkpoint_nbytes(self) -> int:
        """Bytes of the replay in a checkpoint once every buffer is full (rows and priorities)."""
        rows = self.n_buffers * self.capacity * row_nbytes(self.fields)
        return rows + (SumTree.planned_nbytes(self.n_buffers, self.capacity) if self.prioritized else 0)

    def build(self, **options: Any) -> "ReplayBuffer":
        """The buffer (``options``: alpha, beta, eps, seed)."""
        return ReplayBuffer(self.n_buffers, self.capacity, self.fields, prioritized=self.prioritized, **options)


class ReplayBuffer:
    """P ring buffers of ``capacity`` transitions each, sharing one field layout."""

    @staticmethod
    def planned_nbytes(n_buffers: int, capacity: int, fields: dict[str, FieldSpec], prioritized: bool = False) -> int:
        """Memory of ``ReplayBuffer(n_buffers, capacity, fields, prioritized=...)``, computed
        without allocating: what a run checks against the machine before it starts."""
        if not prioritized:
            return n_buffers * capacity * row_nbytes(fields)
        stride = SumTree.leaves_per(capacity)
        return n_buffers * stride * row_nbytes(fields) + SumTree.planned_nbytes(n_buffers, capacity)

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
        self._alpha = alpha
        self._eps = eps
        self.beta = beta  # public: trainers anneal it towards 1
        self._rng = np.random.default_rng(seed)
        self._uniforms = np.empty(0, dtype=np.float64)
        self._uniforms_used = 0
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
        # Shares memory with _size: one unsigned compare also rejects negative indices.
        self._size_u64 = self._size.view(np.uint64)
        # The pointer all buffers share (None once masked adds made them differ): enables slices.
        self._common_ptr: int | None = 0
        self._min_size = 0
        self._last_sample: tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None = None
        self._stored_max_cache: np.ndarray | None = None

    # ------------------------------------------------------------------ state
    @property
    def alpha(self) -> float:
        """Priority exponent (fixed: stored priorities already include it)."""
        return self._alpha

    @property
    def eps(self) -> float:
        """Added to raw priorities before the exponent (fixed, like alpha)."""
        return self._eps

    @property
    def size(self) -> np.ndarray:
        """[P] number of filled slots per buffer."""
        return self._size.copy()

    @property
    def can_sample(self) -> bool:
        """Every buffer holds a row (``sample`` draws from each)."""
        return self._min_size > 0

    @property
    def write_position(self) -> np.ndarray:
        """[P] slot each buffer writes next (its oldest row once full)."""
        return self._ptr.copy()

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
        if priorities is not None:
            if self._tree is None:
                raise ValueError("add: priorities given to a buffer built with prioritized=False")
            priorities = self._check_priorities(priorities, (self.n_buffers, n_rows))
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.n_buffers, n_rows):
                raise ValueError(f"add: mask must have shape {(self.n_buffers, n_rows)}, got {mask.shape}")
            if np.count_nonzero(mask) == mask.size:  # the usual case: every row valid
                mask = None
        if n_rows == 0:
            return
        if mask is None and self._common_ptr is not None:
            self._add_contiguous(arrays, n_rows, priorities)
        else:
            self._add_scattered(arrays, n_rows, mask, priorities)

    def _add_contiguous(self, arrays: dict[str, np.ndarray], n_rows: int, priorities: np.ndarray | None) -> None:
        """All buffers store all rows and share one pointer: slice writes, at most two (wrap)."""
        cap = self.capacity
        first = max(0, n_rows - cap)  # earlier rows would be overwritten within this call
        start = (self._common_ptr + first) % cap
        split = first + min(n_rows - first, cap - start)
        segments = [(start, first, split)] + ([(0, split, n_rows)] if split < n_rows else [])
        if self._tree is not None:
            if priorities is None:
                stored = self._stored_max()
            else:
                stored = self._stored(priorities)
                self._raise_max_priority(priorities[:, first:])
        for slot, r0, r1 in segments:
            whole = r0 == 0 and r1 == n_rows
            for name, a in arrays.items():
                if not whole:
                    a = a[(slice(None),) * (a.ndim - len(self.fields[name].shape) - 1) + (slice(r0, r1),)]
                self._store[name][:, slot : slot + r1 - r0] = a
            if self._tree is not None:
                self._tree.update_range(slot, slot + r1 - r0, stored if priorities is None else stored[:, r0:r1])
        self._common_ptr = (self._common_ptr + n_rows) % cap
        self._ptr.fill(self._common_ptr)
        if self._min_size < cap:  # once every buffer is full, sizes stay put
            self._size += n_rows
            np.minimum(self._size, cap, out=self._size)
            self._min_size = min(self._min_size + n_rows, cap)

    def _add_scattered(
        self, arrays: dict[str, np.ndarray], n_rows: int, mask: np.ndarray | None, priorities: np.ndarray | None
    ) -> None:
        """General add: per-buffer row subsets and pointers, written by one scatter per field."""
        cap = self.capacity
        if mask is None:
            mask = np.ones((self.n_buffers, n_rows), dtype=bool)
        rank = mask.cumsum(axis=1)
        counts = rank[:, -1].copy()
        rank -= 1
        if counts.max() > cap:
            mask = mask & (rank >= counts[:, None] - cap)  # only the last `cap` rows survive
        buf, row = np.nonzero(mask)
        pos = (self._ptr[buf] + rank[buf, row]) % cap + buf * self._stride
        for name, a in arrays.items():
            self._flat[name][pos] = a[row] if a.ndim == len(self.fields[name].shape) + 1 else a[buf, row]
        if self._tree is not None:
            if priorities is None:
                stored = self._stored_max()[buf, 0]
            else:
                stored = self._stored(priorities[buf, row])
                kept_max = priorities.max(axis=1, where=mask, initial=0.0)
                np.maximum(self._max_priority, kept_max, out=self._max_priority)
                self._stored_max_cache = None
            self._tree.update_flat(pos, stored)
        self._ptr += counts
        self._ptr %= cap
        self._size += counts
        np.minimum(self._size, cap, out=self._size)
        self._sync_pointers()

    def _sync_pointers(self) -> None:
        """Refresh the Python-side summaries of _ptr and _size after a general update."""
        first = int(self._ptr[0])
        self._common_ptr = first if (self._ptr == first).all() else None
        self._min_size = int(self._size.min())

    def _check_data(self, data: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
        """Validate field names and shapes; returns the arrays and the row count M."""
        if data.keys() != self.fields.keys():
            raise ValueError(f"add: expected fields {sorted(self.fields)}, got {sorted(data)}")
        arrays: dict[str, np.ndarray] = {}
        n_rows = -1
        for name, spec in self.fields.items():
            a = data[name]
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            nd = len(spec.shape)
            if a.shape[a.ndim - nd :] != spec.shape or a.ndim not in (nd + 1, nd + 2):
                raise ValueError(
                    f"add: field {name!r} has shape {a.shape}, expected [P, M, *{spec.shape}] or [M, *{spec.shape}]"
                )
            if a.ndim == nd + 2 and a.shape[0] != self.n_buffers:
                raise ValueError(f"add: field {name!r} has {a.shape[0]} buffers, expected {self.n_buffers}")
            m = a.shape[a.ndim - nd - 1]
            if n_rows not in (-1, m):
                raise ValueError(f"add: field {name!r} has {m} rows, other fields have {n_rows}")
            n_rows = m
            arrays[name] = a
        return arrays, n_rows

    # ------------------------------------------------------------------ sample
    def sample(self, batch_size: int, gather: bool = True) -> SampledBatch:
        """``batch_size`` rows per buffer, with replacement, independently per buffer
        (``gather=False``: their indices and weights only, ``data`` empty).

        Uniform, or proportional PER: P(i) = p_i / sum_k p_k over stored priorities and
        weights ``(size * P(i)) ** -beta / max_j w_j = (p_i / min_k p_k) ** -beta`` (the max
        over the whole buffer, as in Schaul et al. 2016 and RLlib). PER indices are read-only:
        passing them back to :meth:`update_priorities` as they are takes a faster path.
        """
        if batch_size < 1:
            raise ValueError(f"sample: batch_size must be >= 1, got {batch_size}")
        if self._min_size == 0:
            raise ValueError(f"sample: buffers {np.flatnonzero(self._size == 0).tolist()} are empty")
        u = self._uniform(self.n_buffers * batch_size).reshape(self.n_buffers, batch_size)
        if self._tree is None:
            # floor(u * n) < n for every u < 1 and n < 2**53, so no clipping is needed.
            u *= self._size[:, None]
            slots = u.astype(np.int64)
            rows = slots + self._row_offset
            weights = np.ones((self.n_buffers, batch_size), dtype=np.float32)
        else:
            # Rows share the tree's leaf numbering: the sampled leaves are the rows to gather.
            rows, prio, path = self._tree.sample_leaves(u)
            slots = rows - self._row_offset if self.n_buffers > 1 else rows
            prio /= self._tree.min()[:, None]
            prio **= -self.beta
            weights = prio.astype(np.float32)
            # update_priorities(these indices) reuses the rows and their tree ancestors; the
            # indices are read-only so that they cannot drift from that cache.
            slots.flags.writeable = False
            self._last_sample = (slots, rows, path)
        data = {name: flat.take(rows, axis=0) for name, flat in self._flat.items()} if gather else {}
        return SampledBatch(data=data, indices=slots, weights=weights)

    def _uniform(self, n: int) -> np.ndarray:
        """n draws of U[0, 1), taken from a block: one Generator call costs as much as 1000 draws."""
        if self._uniforms_used + n > self._uniforms.size:
            self._uniforms = self._rng.random(max(n, _UNIFORM_BLOCK))
            self._uniforms_used = 0
        start = self._uniforms_used
        self._uniforms_used += n
        return self._uniforms[start : start + n]

    # ------------------------------------------------------------------ priorities
    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set raw priorities (|td|, non-negative) of sampled slots ``indices`` [P, B].

        Duplicate indices are allowed (the last write wins). Also raises the max priority.
        """
        if self._tree is None:
            raise ValueError("update_priorities needs prioritized=True")
        last = self._last_sample
        if last is not None and indices is last[0]:
            # The indices of the latest sample (read-only, so unchanged): valid by construction.
            priorities = self._check_priorities(priorities, indices.shape)
            self._tree.update_flat(last[1], self._stored(priorities), last[2])
            self._raise_max_priority(priorities)
            return
        indices = np.asarray(indices)
        if indices.dtype != np.int64:
            indices = indices.astype(np.int64)
        if indices.ndim != 2 or indices.shape[0] != self.n_buffers:
            raise ValueError(f"update_priorities: indices must be [P={self.n_buffers}, B], got {indices.shape}")
        priorities = self._check_priorities(priorities, indices.shape)
        if indices.size == 0:
            return
        # As unsigned, negative indices become huge: one max (then, rarely, a per-buffer
        # compare) rejects both those and unfilled slots.
        unsigned = indices.view(np.uint64)
        if int(unsigned.max()) >= self._min_size:
            if not (unsigned < self._size_u64[:, None]).all():
                raise ValueError("update_priorities: an index is negative or not a filled slot")
        self._tree.update_flat((indices + self._row_offset).ravel(), self._stored(priorities).ravel())
        self._raise_max_priority(priorities)

    def _raise_max_priority(self, priorities: np.ndarray) -> None:
        if self.n_buffers == 1:  # argmax + index is cheaper than a ufunc reduction here
            new = priorities.ravel()[priorities.argmax()]
            if new > self._max_priority[0]:
                self._max_priority[0] = new
                self._stored_max_cache = None
        else:
            np.maximum(self._max_priority, priorities.max(axis=1), out=self._max_priority)
            self._stored_max_cache = None

    def _stored_max(self) -> np.ndarray:
        """[P, 1] stored priority of fresh rows, (max_priority + eps) ** alpha, cached."""
        if self._stored_max_cache is None:
            self._stored_max_cache = self._stored(self._max_priority)[:, None]
        return self._stored_max_cache

    def _check_priorities(self, priorities: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        priorities = np.asarray(priorities, dtype=np.float64)
        if priorities.shape != shape:
            raise ValueError(f"priorities: expected shape {shape}, got {priorities.shape}")
        # argmin puts a NaN first, so one comparison rejects NaN and negatives alike.
        if priorities.size and not priorities.ravel()[priorities.argmin()] >= 0:
            raise ValueError("priorities must be non-negative and not NaN")
        return priorities

    def _stored(self, raw: np.ndarray) -> np.ndarray:
        """Stored priority (raw + eps) ** alpha (Schaul et al. 2016, Sec. 3.3)."""
        stored = raw + self._eps
        stored **= self._alpha
        return stored

    # ------------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict[str, Any]:
        """Contents, pointers, sizes, priorities and RNG state; see load_state_dict. The stored
        rows are views into this buffer (no copy): write them, or copy them, before adding more."""
        state: dict[str, Any] = {
            "n_buffers": self.n_buffers,
            "capacity": self.capacity,
            "fields": {name: {"shape": s.shape, "dtype": np.dtype(s.dtype).str} for name, s in self.fields.items()},
            "prioritized": self.prioritized,
            "alpha": self.alpha,
            "beta": self.beta,
            "eps": self.eps,
            # per buffer, views of its filled rows (a ring fills slots 0..size-1 first): a
            # checkpoint writes them at once, so saving holds no second copy of the replay in
            # memory (GBs for MAgent observations) and a young replay's checkpoint is small
            ROWS: {name: [a[i, : self._size[i]] for i in range(self.n_buffers)] for name, a in self._store.items()},
            "ptr": self._ptr.copy(),
            "size": self._size.copy(),
            "max_priority": self._max_priority.copy(),
            "rng_state": self._rng.bit_generator.state,
            "uniforms": self._uniforms[self._uniforms_used :].copy(),
        }
        if self._tree is not None:
            state["tree"] = self._tree.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict from a buffer of the same shape; later samples are identical."""
        fields = {name: (s.shape, np.dtype(s.dtype).str) for name, s in self.fields.items()}
        saved = {name: (tuple(f["shape"]), np.dtype(f["dtype"]).str) for name, f in state["fields"].items()}
        layout = (self.n_buffers, self.capacity, fields, self.prioritized)
        if (state["n_buffers"], state["capacity"], saved, state["prioritized"]) != layout:
            raise ValueError("load_state_dict: the state comes from a buffer with a different layout")
        # a buffer never written holds the zeros it was made with, in pages not yet touched:
        # clearing its unfilled rows would commit a young run's whole capacity at once
        written = bool(self._size.any())
        for name, a in self._store.items():
            for i, rows in enumerate(state[ROWS][name]):
                fill(a[i, : len(rows)], rows)  # straight from the checkpoint's file where it streams them
                if written:
                    a[i, len(rows) : self.capacity] = 0
        self._ptr[:] = state["ptr"]
        self._size[:] = state["size"]
        self._max_priority[:] = state["max_priority"]
        self._alpha, self.beta, self._eps = state["alpha"], state["beta"], state["eps"]
        self._stored_max_cache = None
        self._rng.bit_generator.state = state["rng_state"]
        self._uniforms = np.array(state["uniforms"], dtype=np.float64)
        self._uniforms_used = 0
        self._last_sample = None
        self._sync_pointers()
        if self._tree is not None:
            self._tree.load_state_dict(state["tree"])
