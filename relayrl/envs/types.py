"""What environments hand up, per agent group, with the agent axis ``[N]`` (one env) or
``[E, N]`` (a vector env): what entities act on (``GroupObs``) and one step (``GroupStep``)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np


@dataclass
class GroupObs:
    """What a group's entities act on. ``alive`` marks entities present in ``obs`` (one that
    left the episode has zeros there). ``state``: the env's global state ``[S]`` (``[E, S]``),
    the same for every group, where the env has one (PettingZoo's ``state()``; a value
    decomposition mixer's input). ``action_mask``: the actions each entity may take now,
    ``[N, A]`` bool, where the env restricts them."""

    obs: np.ndarray
    alive: np.ndarray
    state: np.ndarray | None = None
    action_mask: np.ndarray | None = None


@dataclass
class GroupStep:
    """One step of one group.

    ``next_obs`` is the successor of the step (the final observation where an episode
    ended, kept for bootstrapping); ``obs`` is what to act on next (after auto-reset it
    is the first observation of the new episode). ``alive``, ``state`` and ``action_mask``
    describe ``obs``; ``next_state`` and ``next_action_mask`` describe ``next_obs``.
    """

    obs: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    alive: np.ndarray
    state: np.ndarray | None = None
    action_mask: np.ndarray | None = None
    next_state: np.ndarray | None = None
    next_action_mask: np.ndarray | None = None

    def observed(self) -> GroupObs:
        """What to act on next."""
        return GroupObs(self.obs, self.alive, self.state, self.action_mask)

    def set_observed(self, first: GroupObs) -> None:
        """After an auto-reset: act on the new episode's first observation."""
        self.obs, self.alive, self.state, self.action_mask = first.obs, first.alive, first.state, first.action_mask

    def non_finite(self) -> tuple[str, tuple[int, ...], float] | None:
        """The first NaN or inf in the rewards or (float) observations: (field, entity index
        ``(e, i)`` or ``(i,)``, value), or None. One vectorised check per field."""
        batch = self.reward.shape
        for name in ("reward", "next_obs", "obs"):
            values = getattr(self, name)
            if not np.issubdtype(values.dtype, np.floating):
                continue  # integer observations cannot be NaN
            bad = ~np.isfinite(values.reshape(*batch, -1)).all(axis=-1)
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                flat = values[where].reshape(-1)
                return name, where, float(flat[~np.isfinite(flat)][0])
        return None


T = TypeVar("T", GroupObs, GroupStep)


def join(items: Sequence[T], combine: Callable[[list[np.ndarray]], np.ndarray]) -> T:
    """One ``GroupObs`` or ``GroupStep`` from several copies' (``np.stack`` of single envs,
    ``np.concatenate`` of vector envs); a field the env does not give stays None."""
    kind = type(items[0])
    values = {}
    for f in fields(kind):
        parts = [getattr(item, f.name) for item in items]
        values[f.name] = None if parts[0] is None else combine(parts)
    return kind(**values)
