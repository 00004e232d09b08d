"""The policy-gradient actors' action distributions: a categorical over the allowed discrete
actions, and a Gaussian over Box actions squashed to the bounds by tanh or clipped to them
(the probability of a clipped action at a bound is the Gaussian's tail beyond it, so the
ratio of two policies stays exact)."""

import numpy as np
import torch
import torch.nn.functional as F

from relayrl.core.specs import GroupSpec

SQUASH_EPS = 1e-6  # keeps atanh finite for actions stored at the bounds


class BoxActions:
    """A Gaussian over Box actions within ``[low, high]``: squashed by tanh or clipped."""

    def __init__(self, spec: GroupSpec, bounds: str, device: torch.device) -> None:
        self.low = np.asarray(spec.action_low, np.float32).reshape(spec.action_shape)
        self.high = np.asarray(spec.action_high, np.float32).reshape(spec.action_shape)
        self.squash = bounds == "squash"
        self.t_low, self.t_high = torch.as_tensor(self.low, device=device), torch.as_tensor(self.high, device=device)
        self.centre, self.half = (self.t_high + self.t_low) / 2, (self.t_high - self.t_low) / 2

    def to_bounds(self, u: np.ndarray) -> np.ndarray:
        """A Gaussian draw (or mean) as the env's action."""
        if self.squash:
            return (self.low + self.high) / 2 + (self.high - self.low) / 2 * np.tanh(u)
        return np.clip(u, self.low, self.high)

    def log_prob(self, mean: torch.Tensor, log_std: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``log pi(action)`` summed over the action's dimensions."""
        std = log_std.exp()
        if self.squash:
            y = ((action - self.centre) / self.half).clamp(-1 + SQUASH_EPS, 1 - SQUASH_EPS)
            u = torch.atanh(y)
            gaussian = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
            return (gaussian - torch.log(self.half * (1 - y**2))).sum(-1)  # the change of variables a = c + h tanh(u)
        gaussian = -0.5 * ((action - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi)
        above = torch.special.log_ndtr((mean - self.t_high) / std)  # P(u >= high)
        below = torch.special.log_ndtr((self.t_low - mean) / std)
        return torch.where(action >= self.t_high, above, torch.where(action <= self.t_low, below, gaussian)).sum(-1)


def categorical(logits: torch.Tensor, action: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``log pi(action)`` and the entropy of the categorical over the allowed actions."""
    if mask is not None:
        logits = logits.masked_fill(~mask, -torch.inf)
    log_p = F.log_softmax(logits, dim=-1)
    entropy = -(log_p.exp() * torch.where(torch.isfinite(log_p), log_p, 0.0)).sum(-1)
    return log_p.gather(-1, action.long().unsqueeze(-1)).squeeze(-1), entropy
