"""Convolution layout for the stacked Q-network: relayrl's im2col batched matmul vs a
grouped ``conv2d`` over the agent-major channel layout, on the DQN update of each SUPER
domain's observation shape. Prints the median update time of each and their ratio, timed
alternately in the same process (so machine load affects both alike).

    python benchmarks/conv_layout.py [--rounds 6]

The grouped variant shares the QNetwork's parameters (same layout, same outputs; checked
before timing), so only the convolution's implementation differs.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from relayrl.algos.dqn import DQN
from relayrl.algos.sections import DQNConfig
from relayrl.nets.model_config import ModelConfig
from relayrl.nets.qnetwork import QNetwork

CASES = [  # (agents learning, observation shape, actions): Battle main / pretraining, Pursuit, Adversarial-Pursuit prey
    (6, (13, 13, 5), 21),
    (12, (13, 13, 5), 21),
    (8, (7, 7, 3), 5),
    (8, (9, 9, 5), 9),
]


class GroupedConvQNetwork(nn.Module):
    """A QNetwork whose torso runs as one grouped conv2d per layer over ``[B, P * C, H, W]``."""

    def __init__(self, base: QNetwork) -> None:
        super().__init__()
        self.base = base

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        b = self.base
        x = obs.float()
        n_sets, batch, height, width, channels = x.shape
        y = x.permute(1, 0, 4, 2, 3).reshape(batch, n_sets * channels, height, width)
        for conv in b.convs:
            k = conv.kernel_size
            c_in, c_out = conv.weight.shape[1] // (k * k), conv.weight.shape[2]
            weight = conv.weight.view(n_sets, k, k, c_in, c_out).permute(0, 4, 3, 1, 2).reshape(n_sets * c_out, c_in, k, k)
            y = torch.relu(F.conv2d(y, weight, conv.bias.reshape(n_sets * c_out), groups=n_sets))
        _, _, h, w = y.shape
        x = y.view(batch, n_sets, -1, h, w).permute(1, 0, 3, 4, 2).reshape(n_sets, batch, -1)
        for i, fc in enumerate(b.fcs):
            x = fc(x)
            if i < len(b.fcs) - 1:
                x = torch.relu(x)
        advantage = b.advantage(x)
        return b.value(x) + advantage - advantage.mean(dim=-1, keepdim=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("| agents | observation | im2col (relayrl) s | grouped conv2d s | im2col / grouped |")
    print("|---:|---|---:|---:|---:|")
    for n_sets, shape, n_actions in CASES:

        def learner(grouped: bool) -> DQN:
            factory = (lambda p, s, a: GroupedConvQNetwork(QNetwork(p, s, a))) if grouped else None
            return DQN(n_sets, shape, n_actions, DQNConfig(lr=1e-4), ModelConfig(), torch.device("cpu"), 0, network_factory=factory)

        ours, grouped = learner(False), learner(True)
        grouped.online.base.load_state_dict(ours.online.state_dict())
        batch = {
            "obs": rng.random((n_sets, 32, *shape), dtype=np.float32),
            "next_obs": rng.random((n_sets, 32, *shape), dtype=np.float32),
            "action": rng.integers(0, n_actions, (n_sets, 32)).astype(np.uint8),
            "reward": rng.random((n_sets, 32), dtype=np.float32),
            "discount": np.full((n_sets, 32), 0.99, np.float32),
        }
        with torch.no_grad():
            x = torch.as_tensor(batch["obs"])
            torch.testing.assert_close(grouped.online(x), ours.online(x), rtol=1e-4, atol=1e-5)
        weights = np.ones((n_sets, 32), np.float32)
        times: dict[str, list[float]] = {"ours": [], "grouped": []}
        for _ in range(args.rounds):
            for name, lrn in (("ours", ours), ("grouped", grouped)):
                lrn.update(batch, weights)
                start = time.perf_counter()
                for _ in range(3):
                    lrn.update(batch, weights)
                times[name].append((time.perf_counter() - start) / 3)
        a, b = np.median(times["ours"]), np.median(times["grouped"])
        print(f"| {n_sets} | {'x'.join(map(str, shape))} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
