"""Entity axis <-> parameter-set axis.

Environments give ``[..., N, ...]`` per entity; learners and replays work on ``[P, M, ...]``
parameter sets. Independent agents: P = N, set i holds entity i's data. Parameter sharing:
P = 1, the one set holds every entity's data.
"""

import numpy as np


class AgentLayout:
    def __init__(self, n_entities: int, param_sharing: bool) -> None:
        self.n_entities = n_entities
        self.param_sharing = param_sharing
        self.n_sets = 1 if param_sharing else n_entities

    def to_sets(self, x: np.ndarray, entity_axis: int) -> np.ndarray:
        """``x`` with entities on ``entity_axis`` (leading axes before it are batch) -> ``[P, M, ...]``."""
        lead = x.shape[: entity_axis + 1]
        rest = x.shape[entity_axis + 1 :]
        if self.param_sharing:
            return x.reshape(1, int(np.prod(lead)), *rest)
        return np.moveaxis(x, entity_axis, 0).reshape(self.n_entities, -1, *rest)

    def to_entities(self, y: np.ndarray, batch_shape: tuple[int, ...]) -> np.ndarray:
        """Inverse of ``to_sets`` for rows ``[P, M, ...]`` -> ``[*batch_shape, N, ...]``."""
        rest = y.shape[2:]
        if self.param_sharing:
            return y.reshape(*batch_shape, self.n_entities, *rest)
        return np.moveaxis(y.reshape(self.n_entities, *batch_shape, *rest), 0, len(batch_shape))
