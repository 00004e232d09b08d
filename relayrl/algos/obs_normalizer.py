"""Running observation normalisation for P agents, DDPG's "normalized observations"
(paper 001, Table 2).

Each agent keeps the running mean and variance of the observations it collected and
sees ``clip((obs - mean) / std, -5, 5)`` in its actor and critics, on the replay's
states and next states alike. The clip range 5, the std floor 0.1 (variance 1e-2) and
the tiny initial count follow the common DDPG implementation the paper's setting comes
from (observation_range (-5, 5) in the OpenAI baselines DDPG). Statistics merge batches
with the parallel-variance formula of Chan et al. (1979).
"""

from typing import Any

import numpy as np
import torch

OBS_CLIP = 5.0
MIN_VARIANCE = 1e-2
INITIAL_COUNT = 1e-4


class ObsNormalizer:
    """Per-agent running statistics ``[P, obs]``; ``update`` takes ``[P, N, obs]`` with an
    optional validity mask ``[P, N]`` (rows of dead or padded agents are left out)."""

    def __init__(self, n_sets: int, obs_dim: int, device: torch.device) -> None:
        self.device = device
        self.mean = np.zeros((n_sets, obs_dim))
        self.var = np.ones((n_sets, obs_dim))
        self.count = np.full(n_sets, INITIAL_COUNT)
        self._refresh()

    def _refresh(self) -> None:
        self._mean_t = torch.as_tensor(self.mean, dtype=torch.float32, device=self.device)[:, None]
        self._std_t = torch.as_tensor(np.sqrt(np.maximum(self.var, MIN_VARIANCE)), dtype=torch.float32, device=self.device)[:, None]

    def update(self, obs: np.ndarray, mask: np.ndarray | None = None) -> None:
        x = obs.astype(np.float64)
        m = np.ones(x.shape[:2]) if mask is None else mask.astype(np.float64)
        n = m.sum(axis=1)  # [P]
        if not n.any():
            return
        safe_n = np.maximum(n, 1.0)[:, None]
        batch_mean = (m[..., None] * x).sum(axis=1) / safe_n
        batch_var = (m[..., None] * (x - batch_mean[:, None]) ** 2).sum(axis=1) / safe_n
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * (n / total)[:, None]
        m2 = self.var * self.count[:, None] + batch_var * n[:, None] + delta**2 * (self.count * n / total)[:, None]
        self.var = m2 / total[:, None]
        self.count = total
        self._refresh()

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        """``[P, B, obs]`` normalised and clipped to [-5, 5]."""
        return ((obs - self._mean_t) / self._std_t).clamp(-OBS_CLIP, OBS_CLIP)

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.copy(), "var": self.var.copy(), "count": self.count.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["mean"].shape != self.mean.shape:
            raise ValueError(f"observation statistics of shape {state['mean'].shape} do not fit {self.mean.shape}")
        self.mean, self.var, self.count = state["mean"].copy(), state["var"].copy(), state["count"].copy()
        self._refresh()
