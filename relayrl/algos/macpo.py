"""MAC-PO's optimal prioritisation weights (paper 002, Lemma 1 and eq. 3; SPEC §1.3):

    w = |Q_tot - y| * exp(-|Q_tot - Q*|) * f(pi),
    f(pi) = 1 + sum_i prod_{j != i} pi_j - n * prod_j pi_j,

with pi_j the softmax of agent j's Q-values at its taken action and Q* the unrestricted
central value (weighted QMIX's). Weights are normalised per batch to mean 1 over the valid
entries and enter the loss as sum w * td^2 / sum mask.
"""

import torch


def joint_action_factor(pi: torch.Tensor) -> torch.Tensor:
    """f(pi) over the last axis (the n agents), without dividing by any pi_j (a zero
    probability is allowed): products of all but one from prefix and suffix products."""
    ones = torch.ones_like(pi[..., :1])
    prefix = torch.cumprod(torch.cat([ones, pi[..., :-1]], dim=-1), dim=-1)
    suffix = torch.flip(torch.cumprod(torch.cat([ones, torch.flip(pi[..., 1:], [-1])], dim=-1), dim=-1), [-1])
    all_but_one = prefix * suffix
    n = pi.shape[-1]
    return 1 + all_but_one.sum(dim=-1) - n * pi.prod(dim=-1)


def taken_action_probability(agent_q: torch.Tensor, actions: torch.Tensor, available: torch.Tensor | None = None) -> torch.Tensor:
    """pi_j: the softmax of each agent's Q-values ``[..., n, A]`` (over its available
    actions) at its taken action ``[..., n]``."""
    if available is not None:  # a row that allows nothing (padding after an episode's end) counts every action
        agent_q = agent_q.masked_fill(~(available | ~available.any(dim=-1, keepdim=True)), -torch.inf)
    return torch.softmax(agent_q, dim=-1).gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def macpo_weights(q_tot: torch.Tensor, target: torch.Tensor, q_star: torch.Tensor, pi: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Lemma 1's weights ``[...]`` for ``q_tot``, its Bellman ``target`` and ``q_star`` (all
    ``[...]``) and the agents' ``pi [..., n]``, normalised to mean 1 where ``mask`` is set."""
    with torch.no_grad():
        w = (q_tot - target).abs() * torch.exp(-(q_tot - q_star).abs()) * joint_action_factor(pi)
        w = torch.where(mask.bool(), w, 0.0)  # not w * mask: a NaN outside the mask would spread through the sum
        total = w.sum()
        return w * (mask.sum() / total) if total > 0 else mask.to(w.dtype)
