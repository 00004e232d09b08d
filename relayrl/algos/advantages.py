"""Advantages of a rollout: GAE(lambda) over ``[T, ...]`` steps, every env copy and entity at
once, with no loop over the steps.

Schulman et al. 2016 (GAE), eq. 16, with the episode boundaries a rollout holds:

    delta_t = r_t + gamma * (1 - terminated_t) * V(s'_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - over_t) * A_{t+1}

``s'_t`` is the observation after step t: at a truncation (a time limit, or a round's end)
the final observation, so the return bootstraps from it; at a termination nothing follows.
``over_t``: the episode ended with step t (terminated or truncated), so no advantage flows
back across it. The step after the rollout's last bootstraps from ``V(s'_{T-1})``. With
lambda = 1 the returns ``A + V`` are the n-step returns to the end of the rollout (A2C and
SEAC, Christianos et al. 2020).

The recursion is a sum over the later steps of the same episode: A_t = sum_{k >= t}
(gamma lambda)^(k - t) delta_k over the k with no episode end in t..k-1, one [T, T] matrix
product for all columns.
"""

import torch


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    over: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All ``[T, ...]`` (the same trailing shape: env copies, entities): per-step rewards, the
    values of the observations acted on and of the observations after each step, and the
    boolean ends. Returns the advantages and the returns (advantages + values)."""
    steps = rewards.shape[0]
    alive = 1.0 - terminated.to(rewards.dtype)
    delta = rewards + gamma * alive * next_values - values
    ended = over.to(torch.int64)
    episode = torch.cumsum(ended, dim=0) - ended  # [T, ...]: the episode each step belongs to, counted in the rollout
    t = torch.arange(steps, device=rewards.device)
    later = (t[None, :] - t[:, None]).to(rewards.dtype)  # [t, k]: k - t
    decay = torch.where(later >= 0, (gamma * lam) ** later.clamp(min=0), torch.zeros_like(later))
    same = episode[:, None] == episode[None, :]  # [t, k, ...]: no episode end in t..k-1 (for k >= t)
    weights = decay.reshape(steps, steps, *[1] * (rewards.dim() - 1)) * same
    advantages = (weights * delta[None]).sum(dim=1)
    return advantages, advantages + values
