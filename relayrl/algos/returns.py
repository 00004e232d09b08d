"""TD(lambda) targets over episodes (SPEC §1.4, paper 003; the form QMIX-style learners
train on).

For an episode's steps t (time on axis 1, any trailing axes such as agents), with
``next_value[t]`` the target network's value of s_{t+1} (max_a Q or the mixer's Q_tot):

    R_t = r_t + gamma * [lambda * R_{t+1} + (1 - lambda) * next_value[t]]

computed backwards. The episode's last step bootstraps fully where it was truncated
(R = r + gamma * next_value) and not at all where it terminated (R = r); a span that
stops before its episode ends bootstraps at its last step as a truncation does; steps
after the end (padding, ``mask`` 0) get 0. lambda = 0 is the one-step target, lambda = 1 the Monte Carlo
return bootstrapped at a truncation.
"""

import torch


def td_lambda_targets(
    reward: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """``[B, T, ...]`` targets from rewards, next-state values, the end flags of each step
    (bool) and the valid-step mask; one backward pass over T, vectorised over the rest."""
    if lam == 0.0:  # the one-step target needs no pass over time
        return (reward + gamma * next_value * ~terminated) * mask
    targets = torch.zeros_like(reward)
    following = torch.zeros_like(reward[:, 0])  # R_{t+1}
    for t in range(reward.shape[1] - 1, -1, -1):
        # where t is the last step we have (it ended the episode, the next step is padding,
        # or the span stops here), no lambda part
        if t + 1 < reward.shape[1]:
            last = terminated[:, t] | truncated[:, t] | ~mask[:, t + 1].bool()
        else:
            last = torch.ones_like(terminated[:, t])
        bootstrap = next_value[:, t] * ~terminated[:, t]
        blended = torch.where(last, bootstrap, lam * following + (1 - lam) * next_value[:, t])
        following = (reward[:, t] + gamma * blended) * mask[:, t]
        targets[:, t] = following
    return targets
