"""Value decomposition mixers: Q_tot from the agents' chosen Q-values ``[B, N]`` and the
global state ``[B, S]``.

VDN (Sunehag et al. 2018): the sum. QMIX (Rashid et al. 2018): a two-layer network whose
weights come from hypernetworks of the state, made non-negative (absolute value) so that
Q_tot is monotonic in every agent's Q; ``embed`` 32 and hypernetworks of one hidden layer
of 64 (SPEC §1.3, paper 002's Tables II-III).
"""

import torch
from torch import nn
from torch.nn import functional as F


class VDNMixer(nn.Module):
    def forward(self, agent_q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return agent_q.sum(dim=-1)


class QMixer(nn.Module):
    def __init__(self, n_agents: int, state_size: int, embed: int = 32, hypernet_hidden: int = 64) -> None:
        super().__init__()
        self.n_agents, self.embed = n_agents, embed

        def hyper(out: int) -> nn.Module:
            return nn.Sequential(nn.Linear(state_size, hypernet_hidden), nn.ReLU(), nn.Linear(hypernet_hidden, out))

        self.w1 = hyper(n_agents * embed)
        self.b1 = nn.Linear(state_size, embed)
        self.w2 = hyper(embed)
        self.v = nn.Sequential(nn.Linear(state_size, embed), nn.ReLU(), nn.Linear(embed, 1))

    def forward(self, agent_q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """``agent_q [..., N]``, ``state [..., S]`` -> ``Q_tot [...]``."""
        lead = agent_q.shape[:-1]
        q = agent_q.reshape(-1, 1, self.n_agents)
        s = state.reshape(-1, state.shape[-1])
        w1 = self.w1(s).abs().view(-1, self.n_agents, self.embed)
        hidden = F.elu(torch.bmm(q, w1) + self.b1(s).unsqueeze(1))
        w2 = self.w2(s).abs().view(-1, self.embed, 1)
        return (torch.bmm(hidden, w2).view(-1) + self.v(s).view(-1)).view(lead)
