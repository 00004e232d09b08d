"""Batched sum trees (with minima) for proportional prioritized replay.

Schaul et al. 2016, "Prioritized Experience Replay", Sec. 3.3 and App. B.2.1: a sum tree
samples leaf i with probability p_i / sum_k p_k by descending with a prefix mass drawn
uniformly in [0, total); the minimum priority gives the importance-weight normaliser.

Layout (P trees in one set of flat arrays; every operation is one batched call). Numpy call
overhead, not arithmetic, dominates at replay batch sizes, so the layout minimises calls:

* ``depth`` levels of ``K``-ary nodes above the leaves, then ``top_width`` top nodes per tree
  (K=16, top_width <= 1024: 2 levels for 120k leaves where a binary tree has 17).
* Each internal node stores the running sums of its children as one row
  ``[0, c_0, c_0 + c_1, ..., total]``: a descent step is one gather + compare + argmax plus a
  lookup of the exclusive prefix; the cumsum that builds a row runs at update time.
* The top level is searched with one ``np.searchsorted`` over the running sum of all P * T
  top nodes (tree p's mass shifted by the total of the trees before it). That running sum is
  rebuilt lazily, once per search after updates, rather than on every update.
* Minima are kept per lowest internal node only, and reduced over a tree on request (once
  per sample), which is cheaper than maintaining more levels on every update.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SumTree"]

# Deferred leaves before a forced recomputation (bounds memory between queries).
_PENDING_LIMIT = 4096


def _shape(n_trees: int, capacity: int, branching: int, max_top: int) -> tuple[int, int, list[int]]:
    """Depth, top width and node counts per depth (top first) of P trees over ``capacity`` leaves."""
    k, depth = branching, 0
    while -(-capacity // k**depth) > max_top:
        depth += 1
    top = -(-capacity // k**depth)
    return depth, top, [n_trees * top * k**d for d in range(depth + 1)]


class SumTree:
    """P sum trees over ``capacity`` leaves each, plus each tree's smallest positive leaf.

    Leaves hold non-negative values (0 = unset / never sampled). Leaf ``(p, slot)`` lives at
    global index ``p * leaves_per_tree + slot`` (``leaves_per_tree >= capacity``).
    """

    def __init__(self, n_trees: int, capacity: int, branching: int = 16, max_top: int = 1024) -> None:
        if n_trees < 1 or capacity < 1:
            raise ValueError(f"need n_trees >= 1 and capacity >= 1, got {n_trees}, {capacity}")
        if branching < 2 or max_top < 1:
            raise ValueError(f"need branching >= 2 and max_top >= 1, got {branching}, {max_top}")
        self.n_trees = n_trees
        self.capacity = capacity
        self.branching = k = branching
        depth, t, counts = _shape(n_trees, capacity, branching, max_top)
        self.depth, self.top_width = depth, t
        self.leaves_per_tree = t * k**depth
        # Depth 0 = the top nodes, depth `depth` = the leaves.
        # _rows[d]: per node at depth d, [0, running sums of its K children].
        # _sums[d]: node sums at depth d (also the rows' last column, but gathering from that
        # strided view is several times slower than from a contiguous copy).
        self._rows = [np.zeros((n, k + 1), dtype=np.float64) for n in counts[:-1]]
        self._rows_flat = [rows.reshape(-1) for rows in self._rows]
        self._sums = [np.zeros(n, dtype=np.float64) for n in counts]
        self._leaves = self._sums[-1]
        # Smallest positive leaf below each lowest internal node (unused when depth == 0).
        self._group_mins = np.full(counts[-2] if depth else 0, np.inf, dtype=np.float64)
        self._top_cumsum = np.zeros(counts[0] + 1, dtype=np.float64)
        self._top_stale = False
        # Leaves written since their ancestors were last recomputed (with known ancestors).
        self._pending: list[tuple[np.ndarray, list[np.ndarray] | None]] = []
        self._pending_size = 0
        # Per-tree views for slice updates: [P, nodes per tree(, K(+1))] at each depth.
        self._leaves_2d = self._leaves.reshape(n_trees, -1)
        self._sums_2d = [sums.reshape(n_trees, -1) for sums in self._sums]
        self._child_sums_3d = [self._sums[d + 1].reshape(n_trees, -1, k) for d in range(depth)]
        self._rows_3d = [rows.reshape(n_trees, -1, k + 1) for rows in self._rows]
        self._group_mins_2d = self._group_mins.reshape(n_trees, -1)
        trees = np.arange(n_trees, dtype=np.int64)[:, None]
        self._top_first = trees * t
        self._top_last = trees * t + (t - 1)
        self._leaf_offset = trees * self.leaves_per_tree

    @staticmethod
    def leaves_per(capacity: int, branching: int = 16, max_top: int = 1024) -> int:
        """``leaves_per_tree`` of a tree over ``capacity`` leaves."""
        depth, top, _ = _shape(1, capacity, branching, max_top)
        return top * branching**depth

    @staticmethod
    def planned_nbytes(n_trees: int, capacity: int, branching: int = 16, max_top: int = 1024) -> int:
        """Bytes the arrays of ``SumTree(n_trees, capacity)`` take, computed without allocating."""
        depth, _, counts = _shape(n_trees, capacity, branching, max_top)
        internal = sum(counts[:-1])
        return 8 * (sum(counts) + internal * (branching + 1) + (counts[-2] if depth else 0) + counts[0] + 1)

    # ------------------------------------------------------------------ queries
    def total(self) -> np.ndarray:
        """[P] sum of the leaves of each tree."""
        self._flush()
        if self.n_trees == 1:  # the search's running sum already ends with it
            return self._top_sums()[-1:].copy()
        return self._sums[0].reshape(self.n_trees, self.top_width).sum(axis=1)

    def min(self) -> np.ndarray:
        """[P] smallest positive leaf of each tree (+inf if it has none)."""
        self._flush()
        if self.depth == 0:
            leaves = self._leaves.reshape(self.n_trees, -1)
            return np.minimum.reduce(leaves, axis=1, where=leaves > 0, initial=np.inf)
        if self.n_trees == 1:  # argmin + index is cheaper than a ufunc reduction here
            return self._group_mins[self._group_mins.argmin(keepdims=True)]
        return self._group_mins.reshape(self.n_trees, -1).min(axis=1)

    def get(self, tree_idx: np.ndarray, slot_idx: np.ndarray) -> np.ndarray:
        """Leaf values at (tree_idx, slot_idx), broadcast together."""
        return self._leaves[np.asarray(tree_idx) * self.leaves_per_tree + slot_idx]

    def leaves(self) -> np.ndarray:
        """[P, leaves_per_tree] read-only view of the leaf values."""
        view = self._leaves.reshape(self.n_trees, self.leaves_per_tree).view()
        view.flags.writeable = False
        return view

    # ------------------------------------------------------------------ update
    def update(self, tree_idx: np.ndarray, slot_idx: np.ndarray, values: np.ndarray) -> None:
        """Set leaf (tree_idx, slot_idx) to values; the three broadcast together.

        Duplicate (tree, slot) pairs are allowed: the last one wins, and ancestors are
        recomputed from their children, so duplicates cannot leave sums inconsistent.
        """
        tree_idx, slot_idx, values = np.broadcast_arrays(tree_idx, slot_idx, values)
        if np.any(values < 0) or np.isnan(values).any():
            raise ValueError("SumTree values must be non-negative")
        self.update_flat((tree_idx * self.leaves_per_tree + slot_idx).ravel(), values.ravel())

    def update_flat(self, leaf: np.ndarray, values: np.ndarray, path: list[np.ndarray] | None = None) -> None:
        """Set global leaves ``leaf`` (``tree * leaves_per_tree + slot``, any shape) to ``values``.

        ``path`` optionally gives the leaves' ancestors at depths 0 .. depth-1 (as returned by
        :meth:`sample_leaves`), saving their recomputation. Values are not validated here
        (hot path): they must be non-negative and not NaN.

        Ancestors are recomputed lazily, at the next query: a training step's priority update
        and its next insert then share one batched recomputation instead of paying two.
        """
        self._leaves[leaf] = values
        self._defer(leaf, path)

    def _defer(self, leaf: np.ndarray, path: list[np.ndarray] | None) -> None:
        self._pending.append((leaf, path))
        self._pending_size += leaf.size
        if self._pending_size > _PENDING_LIMIT:
            self._flush()

    def _flush(self) -> None:
        """Recompute the ancestors of all pending leaves (every query calls this first)."""
        if not self._pending:
            return
        pending, self._pending, self._pending_size = self._pending, [], 0
        if len(pending) == 1:
            self._propagate(*pending[0])
        else:
            self._propagate(np.concatenate([leaf.ravel() for leaf, _ in pending]))

    def _propagate(self, node: np.ndarray | None, path: list[np.ndarray] | None = None) -> None:
        """Recompute the ancestors of global leaves ``node`` (every internal node if None)."""
        k = self.branching
        for d in range(self.depth - 1, -1, -1):
            rows = self._rows[d]
            child_sums = self._sums[d + 1].reshape(-1, k)
            if node is None or rows.shape[0] <= node.size:
                # As many updates as nodes at this depth (and above): redo them all, no gather.
                if d == self.depth - 1:
                    self._group_min(child_sums, out=self._group_mins)
                np.add.accumulate(child_sums, axis=1, out=rows[:, 1:])
                self._sums[d][:] = rows[:, k]
                node = None
                continue
            node = node // k if path is None else path[d]
            csum = child_sums.take(node, axis=0)
            if d == self.depth - 1:
                self._group_mins[node] = self._group_min(csum)
            np.add.accumulate(csum, axis=-1, out=csum)
            rows[node, 1:] = csum
            self._sums[d][node] = csum[..., -1]
        self._top_stale = True

    def update_range(self, start: int, stop: int, values: np.ndarray) -> None:
        """Set slots ``start .. stop - 1`` of every tree to ``values`` (broadcast to [P, stop - start]).

        The contiguous case of :meth:`update_flat` (ring-buffer inserts), applied at once with
        slices instead of gathers. Values are not validated (hot path): they must be
        non-negative and not NaN.
        """
        if not 0 <= start <= stop <= self.leaves_per_tree:
            raise ValueError(f"update_range: slots [{start}, {stop}) outside [0, {self.leaves_per_tree})")
        if stop == start:
            return
        self._leaves_2d[:, start:stop] = values
        lo, hi, k = start, stop, self.branching
        for d in range(self.depth - 1, -1, -1):
            lo, hi = lo // k, (hi - 1) // k + 1
            children = self._child_sums_3d[d][:, lo:hi]
            if d == self.depth - 1:
                self._group_min(children, out=self._group_mins_2d[:, lo:hi])
            rows = self._rows_3d[d][:, lo:hi]
            np.add.accumulate(children, axis=2, out=rows[..., 1:])
            self._sums_2d[d][:, lo:hi] = rows[..., k]
        self._top_stale = True

    @staticmethod
    def _group_min(leaves: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Smallest positive value along the last axis (+inf if none)."""
        return np.minimum.reduce(leaves, axis=-1, where=leaves > 0, initial=np.inf, out=out)

    # ------------------------------------------------------------------ search
    def find_prefix_sum(
        self, mass: np.ndarray, return_values: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """[P, B] slots: in tree p, the smallest slot i with leaf_0 + ... + leaf_i > mass[p, b].

        Equals ``np.searchsorted(np.cumsum(leaves[p]), mass[p], side="right")`` for masses in
        [0, total). A mass that lands on a zero leaf or past the end (float error, or
        mass >= total) gets the last positive leaf before that point instead.
        With ``return_values`` also returns the [P, B] leaf values at those slots.
        """
        top = self._top_sums()
        mass = np.asarray(mass, dtype=np.float64)
        shifted = mass if self.n_trees == 1 else mass + top[self._top_first]
        leaf, values, _ = self._descend(shifted, mass)
        slots = leaf - self._leaf_offset
        return (slots, values) if return_values else slots

    def sample_leaves(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Proportional sampling: ``find_prefix_sum(u * total)`` for uniform ``u`` [P, B] in [0, 1).

        Returns global leaf indices [P, B], their values [P, B] and their ancestors per depth
        (for :meth:`update_flat`). ``u`` is overwritten.
        """
        top = self._top_sums()
        if self.n_trees == 1:
            u *= top[-1]
            return self._descend(u, u)
        mass = u * self.total()[:, None]
        return self._descend(mass + top[self._top_first], mass)

    def _descend(self, shifted: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Global leaves, values and ancestors for masses already shifted into the top running sum."""
        top = self._top_cumsum
        if self.n_trees == 1:
            # Searching the first T - 1 running sums sends an overshoot to the last node.
            node = top[1 : self.top_width].searchsorted(shifted, side="right")
        else:
            node = top[1:].searchsorted(shifted, side="right")
            np.minimum(node, self._top_last, out=node)
        rest = (shifted - top[node])[..., None]
        path = []
        k = self.branching
        for rows, rows_flat in zip(self._rows, self._rows_flat):
            path.append(node)
            child = (rows.take(node, axis=0)[..., 1:] > rest).argmax(axis=-1)
            # One index gives both the child's exclusive prefix and (minus node) the child.
            prefix_at = node * (k + 1) + child
            rest -= rows_flat[prefix_at][..., None]
            node = prefix_at - node
        values = self._leaves[node]
        # A sound descent ends with 0 <= rest < leaf; anything else overshot (rare).
        ok = rest[..., 0] < values
        if np.count_nonzero(ok) != ok.size:  # cheaper than ok.all()
            self._resolve_exact(mass, ok, node, values)
            path, above = [], node
            for _ in range(self.depth):
                above = above // k
                path.insert(0, above)
        return node, values, path

    def _resolve_exact(self, mass: np.ndarray, ok: np.ndarray, leaf: np.ndarray, values: np.ndarray) -> None:
        """Redo the samples where ``ok`` is False by a flat search; clamp to the last positive leaf."""
        leaves = self.leaves()
        mass = np.broadcast_to(mass, leaf.shape)
        for p, b in zip(*np.nonzero(~ok)):
            cumsum = np.cumsum(leaves[p])
            slot = min(int(np.searchsorted(cumsum, mass[p, b], side="right")), self.leaves_per_tree - 1)
            nonzero = np.flatnonzero(leaves[p, : slot + 1])
            slot = int(nonzero[-1]) if nonzero.size else 0
            leaf[p, b], values[p, b] = p * self.leaves_per_tree + slot, leaves[p, slot]

    def _top_sums(self) -> np.ndarray:
        """[0, running sum of all P * T top nodes], rebuilt if an update made it stale."""
        self._flush()
        if self._top_stale:
            np.add.accumulate(self._sums[0], out=self._top_cumsum[1:])
            self._top_stale = False
        return self._top_cumsum

    # ------------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every array, so a restored tree is bit-identical (not just equal in value)."""
        self._flush()
        return {name: a.copy() for name, a in self._arrays().items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        targets = self._arrays()
        if set(state) != set(targets):
            raise ValueError(f"SumTree.load_state_dict: expected keys {sorted(targets)}, got {sorted(state)}")
        for name, target in targets.items():
            if np.shape(state[name]) != target.shape:
                shape = np.shape(state[name])
                raise ValueError(f"SumTree.load_state_dict: {name} has shape {shape}, expected {target.shape}")
        for name, target in targets.items():
            target[...] = state[name]
        self._pending, self._pending_size = [], 0
        self._top_stale = True

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"sums{d}": s for d, s in enumerate(self._sums)}
        arrays.update({f"rows{d}": rows for d, rows in enumerate(self._rows)})
        arrays["group_mins"] = self._group_mins
        return arrays
