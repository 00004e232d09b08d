"""Batched sum/min trees for proportional prioritized replay.

Schaul et al. 2016, "Prioritized Experience Replay", Sec. 3.3 and App. B.2.1: a sum tree
samples leaf i with probability p_i / sum_k p_k by descending with a prefix mass drawn
uniformly in [0, total); a min tree gives min_k p_k for the importance-weight normaliser.

Layout (P trees in one set of flat arrays, every operation one batched call):

* ``D`` levels of ``K``-ary nodes above the leaves, then ``T`` top nodes per tree. Each
  internal node stores its children's running sums as one row ``[0, c_0, c_0 + c_1, ...,
  c_0 + ... + c_{K-2}, +inf]``, so a descent step is one gather + compare + argmax (the +inf
  sentinel sends a mass that overshoots through float error to the last child rather than
  wrapping to the first). The cumsum that builds a row runs at update time, batched.
* The top level is searched with one ``np.searchsorted`` over the running sum of all P*T top
  nodes (each tree's mass is shifted by the sum of the trees before it). That running sum is
  rebuilt lazily, once per search after any update, rather than once per update.

Numpy call overhead, not arithmetic, dominates at replay batch sizes, so the layout minimises
calls per operation: K=16 and T<=1024 give 3 levels for 120k leaves instead of 17 binary ones.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SumTree"]


class SumTree:
    """P sum trees and P min trees over ``capacity`` leaves each.

    Leaves hold non-negative values; unset leaves are 0 for the sum and +inf for the min.
    Leaf ``(p, slot)`` lives at global index ``p * leaves_per_tree + slot``
    (``leaves_per_tree >= capacity``), which callers may use to lay out parallel arrays.
    """

    def __init__(self, n_trees: int, capacity: int, branching: int = 16, max_top: int = 1024) -> None:
        if n_trees < 1 or capacity < 1:
            raise ValueError(f"need n_trees >= 1 and capacity >= 1, got {n_trees}, {capacity}")
        if branching < 2 or max_top < 1:
            raise ValueError(f"need branching >= 2 and max_top >= 1, got {branching}, {max_top}")
        self.n_trees = n_trees
        self.capacity = capacity
        self.branching = k = branching
        depth = 0
        while -(-capacity // k**depth) > max_top:
            depth += 1
        self.depth = depth
        self.top_width = t = -(-capacity // k**depth)
        self.leaves_per_tree = t * k**depth
        counts = [n_trees * t * k**d for d in range(depth + 1)]
        # Level d holds the counts[d] nodes at depth d below the top; level `depth` = leaves.
        self._sums = [np.zeros(n, dtype=np.float64) for n in counts]
        self._mins = [np.full(n, np.inf, dtype=np.float64) for n in counts]
        self._rows: list[np.ndarray] = []
        for n in counts[:-1]:
            rows = np.zeros((n, k + 1), dtype=np.float64)
            rows[:, -1] = np.inf
            self._rows.append(rows)
        self._rows_flat = [r.reshape(-1) for r in self._rows]
        self._top_cumsum = np.zeros(n_trees * t + 1, dtype=np.float64)
        self._top_stale = False
        trees = np.arange(n_trees, dtype=np.int64)[:, None]
        self._top_first = trees * t
        self._top_last = trees * t + (t - 1)
        self._leaf_offset = trees * self.leaves_per_tree

    # ------------------------------------------------------------------ queries
    def total(self) -> np.ndarray:
        """[P] sum of the leaves of each tree."""
        return self._sums[0].reshape(self.n_trees, self.top_width).sum(axis=1)

    def min(self) -> np.ndarray:
        """[P] smallest set leaf of each tree (+inf for a tree with no leaf set)."""
        return self._mins[0].reshape(self.n_trees, self.top_width).min(axis=1)

    def get(self, tree_idx: np.ndarray, slot_idx: np.ndarray) -> np.ndarray:
        """Leaf values at (tree_idx, slot_idx), broadcast together."""
        return self._sums[-1][np.asarray(tree_idx) * self.leaves_per_tree + slot_idx]

    def leaves(self) -> np.ndarray:
        """[P, leaves_per_tree] read-only view of the leaf values."""
        view = self._sums[-1].reshape(self.n_trees, self.leaves_per_tree).view()
        view.flags.writeable = False
        return view

    # ------------------------------------------------------------------ update
    def update(self, tree_idx: np.ndarray, slot_idx: np.ndarray, values: np.ndarray) -> None:
        """Set leaf (tree_idx, slot_idx) to values; the three broadcast together.

        Duplicate (tree, slot) pairs are allowed: the last one wins, and ancestors are
        recomputed from their children, so duplicates cannot leave sums inconsistent.
        """
        tree_idx, slot_idx, values = np.broadcast_arrays(tree_idx, slot_idx, values)
        self.update_flat((tree_idx * self.leaves_per_tree + slot_idx).ravel(), values.ravel())

    def update_rows(self, slot_idx: np.ndarray, values: np.ndarray) -> None:
        """:meth:`update` for ``slot_idx`` of shape [P, B] whose row p addresses tree p."""
        self.update_flat((slot_idx + self._leaf_offset).ravel(), np.ravel(values))

    def update_flat(self, leaf: np.ndarray, values: np.ndarray) -> None:
        """Set global leaves ``leaf`` (1-D, ``tree * leaves_per_tree + slot``) to ``values``."""
        self._sums[-1][leaf] = values
        self._mins[-1][leaf] = values
        self._propagate(leaf)

    def _propagate(self, node: np.ndarray | None) -> None:
        """Recompute the ancestors of leaves ``node`` (all internal nodes when None)."""
        k = self.branching
        for d in range(self.depth - 1, -1, -1):
            rows = self._rows[d]
            child_sums = self._sums[d + 1].reshape(-1, k)
            child_mins = self._mins[d + 1].reshape(-1, k)
            if node is None or rows.shape[0] <= node.size:
                # Few nodes at this depth (and so above it): redoing all beats gathering.
                csum = child_sums.cumsum(axis=1)
                rows[:, 1:k] = csum[:, :-1]
                self._sums[d][:] = csum[:, -1]
                np.minimum.reduce(child_mins, axis=1, out=self._mins[d])
                node = None
                continue
            node = node // k
            csum = child_sums.take(node, axis=0).cumsum(axis=1)
            rows[node, 1:k] = csum[:, :-1]
            self._sums[d][node] = csum[:, -1]
            self._mins[d][node] = child_mins.take(node, axis=0).min(axis=1)
        self._top_stale = True

    def state_dict(self) -> dict[str, np.ndarray]:
        """Leaf values (sum and min views); every internal node is derived from them."""
        return {"sum_leaves": self._sums[-1].copy(), "min_leaves": self._mins[-1].copy()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore leaves and rebuild the trees bit-identically (same ops on the same leaves)."""
        for name, level in (("sum_leaves", self._sums[-1]), ("min_leaves", self._mins[-1])):
            if np.shape(state[name]) != level.shape:
                raise ValueError(f"{name}: expected shape {level.shape}, got {np.shape(state[name])}")
            level[:] = state[name]
        self._propagate(None)

    # ------------------------------------------------------------------ search
    def find_prefix_sum(
        self, mass: np.ndarray, return_values: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """[P, B] slots: in tree p, the smallest slot i with leaf_0 + ... + leaf_i > mass[p, b].

        Equals ``np.searchsorted(np.cumsum(leaves[p]), mass[p], side="right")`` for masses in
        [0, total). A mass that overshoots (float error, or mass >= total) returns the last
        non-zero leaf at or before where it landed, never an unset leaf of a non-empty tree.
        With ``return_values`` also returns the [P, B] leaf values at those slots.
        """
        top = self._top_cumsum
        if self._top_stale:
            np.cumsum(self._sums[0], out=top[1:])
            self._top_stale = False
        # Shift each tree's mass by the total of the trees before it: one search for all P.
        mass = mass + top[self._top_first]
        node = top.searchsorted(mass, side="right") - 1
        np.minimum(node, self._top_last, out=node)
        mass -= top[node]
        k = self.branching
        for rows, rows_flat in zip(self._rows, self._rows_flat):
            child = (rows.take(node, axis=0)[..., 1:] > mass[..., None]).argmax(axis=-1)
            node_k = node * k
            mass -= rows_flat[node_k + node + child]
            node = node_k + child
        values = self._sums[-1][node]
        slots = node - self._leaf_offset
        if not values.all():
            self._fix_overshoot(slots, values)
        return (slots, values) if return_values else slots

    def _fix_overshoot(self, slots: np.ndarray, values: np.ndarray) -> None:
        """Move samples that landed on an unset leaf to the last set leaf before it (rare).

        A descent only reaches a zero leaf when its mass exceeded a subtree's float total, i.e.
        it belongs (up to rounding) at the right edge of the last non-zero leaf to its left.
        """
        leaves = self.leaves()
        for p, b in zip(*np.nonzero(values == 0)):
            nonzero = np.flatnonzero(leaves[p, : slots[p, b] + 1])
            if nonzero.size == 0:
                nonzero = np.flatnonzero(leaves[p])
            if nonzero.size:
                slots[p, b] = nonzero[-1]
                values[p, b] = leaves[p, nonzero[-1]]
