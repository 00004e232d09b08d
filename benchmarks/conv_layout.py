"""Convolution layout for the stacked Q-network: relayrl's grouped ``conv2d`` over
agent-major channels (channels-last memory, ReLUs in place) vs the batched matmul over the
k x k shifted views of channel-last inputs (im2col by slicing, ReLUs out of place) that
relayrl used before 2026-11-28, on the DQN update of each SUPER domain's observation shape.
Prints the median update time of each and their ratio, timed alternately in the same
process (so machine load affects both alike).

    python benchmarks/conv_layout.py [--rounds 6]

The im2col variant shares the QNetwork's parameters (same layout, same outputs; checked
before timing), so only the torso's implementation differs.
"""

import argparse
import time

import numpy as np
import torch
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


class Im2colQNetwork(nn.Module):
    """A QNetwork whose torso runs each layer as one batched matmul of ``[P, B*H'*W', k*k*C]``
    patches (the k x k shifted views concatenated on the channel axis) by ``[P, k*k*C, C_out]``."""

    def __init__(self, base: QNetwork) -> None:
        super().__init__()
        self.base = base

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        b = self.base
        x = obs.float()
        for conv in b.convs:
            n_sets, batch, height, width, _ = x.shape
            k = conv.kernel_size
            out_h, out_w = height - k + 1, width - k + 1
            patches = torch.cat([x[:, :, i : i + out_h, j : j + out_w, :] for i in range(k) for j in range(k)], dim=-1)
            y = torch.baddbmm(conv.bias, patches.reshape(n_sets, batch * out_h * out_w, -1), conv.weight)
            x = torch.relu(y.reshape(n_sets, batch, out_h, out_w, -1))
        x = x.reshape(x.shape[0], x.shape[1], -1)
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
    print("| agents | observation | relayrl s | im2col form s | im2col / relayrl |")
    print("|---:|---|---:|---:|---:|")
    for n_sets, shape, n_actions in CASES:

        def learner(im2col: bool) -> DQN:
            factory = (lambda p, s, a: Im2colQNetwork(QNetwork(p, s, a))) if im2col else None
            return DQN(n_sets, shape, n_actions, DQNConfig(lr=1e-4), ModelConfig(), torch.device("cpu"), 0, network_factory=factory)

        ours, im2col = learner(False), learner(True)
        im2col.online.base.load_state_dict(ours.online.state_dict())
        batch = {
            "obs": rng.random((n_sets, 32, *shape), dtype=np.float32),
            "next_obs": rng.random((n_sets, 32, *shape), dtype=np.float32),
            "action": rng.integers(0, n_actions, (n_sets, 32)).astype(np.uint8),
            "reward": rng.random((n_sets, 32), dtype=np.float32),
            "discount": np.full((n_sets, 32), 0.99, np.float32),
        }
        with torch.no_grad():
            x = torch.as_tensor(batch["obs"])
            torch.testing.assert_close(im2col.online(x), ours.online(x), rtol=1e-4, atol=1e-5)
        weights = np.ones((n_sets, 32), np.float32)
        times: dict[str, list[float]] = {"ours": [], "im2col": []}
        for _ in range(args.rounds):
            for name, lrn in (("ours", ours), ("im2col", im2col)):
                lrn.update(batch, weights)
                start = time.perf_counter()
                for _ in range(3):
                    lrn.update(batch, weights)
                times[name].append((time.perf_counter() - start) / 3)
        a, b = np.median(times["ours"]), np.median(times["im2col"])
        print(f"| {n_sets} | {'x'.join(map(str, shape))} | {a:.3f} | {b:.3f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
