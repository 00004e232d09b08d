"""Shared Experience Actor-Critic (Christianos et al. 2020, "Shared Experience Actor-Critic
for Multi-Agent Reinforcement Learning", eqs. 4 and 5): A2C with a network per agent, where
agent i also learns from every other agent k's rollout steps, weighted by the importance
ratio of its own policy to k's:

    policy_i  += -lambda * sum_k mean_k [ pi_i(a_k|o_k) / pi_k(a_k|o_k) * log pi_i(a_k|o_k) * (y_k - V_i(o_k)) ]
    value_i   +=  lambda * sum_k mean_k [ pi_i(a_k|o_k) / pi_k(a_k|o_k) * (V_i(o_k) - y_k)^2 ]

with the ratio held constant, y_k agent k's n-step return (bootstrapped by its own critic,
as the authors' code does) and lambda = ``seac_coef`` (1 in the paper). pi_k is the policy
that acted, whose log-probabilities the rollout keeps.

relayrl's sharing narrows it (``sharing.select`` at ``sharing.bandwidth``, SUPER's rules,
paper 000 section 4.1): each agent offers only the steps of largest |advantage|, and the
others learn from those alone, each step weighted as in SEAC (1 / the sender's step count),
so bandwidth 1 is SEAC exactly and the relay counts what travels
(``relayrl.algos.on_policy``).
"""

from typing import Any

import torch

from relayrl.algos.policy_gradient import PolicyGradient
from relayrl.algos.sections import OnPolicyConfig
from relayrl.core.specs import GroupSpec


class SEAC(PolicyGradient):
    """A2C's agents plus the other agents' relayed steps: ``shared_*`` rows ``[1, R, ...]``
    with ``shared_weight [P, R]`` (1 / the sender's step count where set i takes row r)."""

    metric_columns = (*PolicyGradient.metric_columns, "shared_ratio")

    def extra_loss(self, b: dict[str, torch.Tensor]) -> tuple[torch.Tensor | float, dict[str, float]]:
        if "shared_obs" not in b:
            return 0.0, {}
        c, p = self.config, self.n_sets
        rows = b["shared_weight"].shape[1]
        expand = {k: v.expand(p, *v.shape[1:]) for k, v in b.items() if k.startswith("shared_") and k != "shared_weight"}
        agent = torch.zeros(p, rows, dtype=torch.long, device=self.device)  # SEAC's agents keep parameters of their own
        logp, _ = self.evaluate(expand["shared_obs"], agent, expand["shared_action"], expand.get("shared_action_mask"))
        ratio = (logp - expand["shared_logp"]).exp().detach()  # pi_i(a_k|o_k) / pi_k(a_k|o_k)
        scaled = self.values(expand["shared_critic_obs"], agent)
        returns = expand["shared_returns"]
        advantage = (returns - self.to_returns(scaled)).detach()
        weight = b["shared_weight"] * ratio
        policy = -(weight * logp * advantage).sum(dim=1)
        value = (weight * self._value_loss(scaled - self.to_scaled(returns))).sum(dim=1)
        taken = b["shared_weight"] > 0
        mean_ratio = float(ratio[taken].mean()) if bool(taken.any()) else float("nan")
        return c.seac_coef * (policy + c.value_coef * value), {"shared_ratio": mean_ratio}


def make_seac(spec: GroupSpec, config: OnPolicyConfig, n_sets: int, device: torch.device, seed: int, **_: Any) -> SEAC:
    return SEAC(spec, config, n_sets, device, seed)
