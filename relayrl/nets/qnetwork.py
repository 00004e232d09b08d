"""Q-network for DQN-family learners, P parameter sets at once.

Grid torso (SPEC §1.1, after the SUPER reference's model under RLlib's DQN head): three
2x2 stride-1 unpadded convolutions with 32, 64, 64 channels, each ReLU (7x7 -> 4x4x64 =
1024 features), linear 1024->64 ReLU, linear 64->256 (no activation). Vector torso: an
MLP. Head: advantage stream 256->256 ReLU->A; with ``dueling`` also a value stream
256->256 ReLU->1 and Q = V + A - mean(A) (Wang et al. 2016, eq. 9).
"""

from collections.abc import Sequence

import torch
from torch import nn


from relayrl.core.errors import ConfigError
from relayrl.core.resources import available_memory, human_bytes
from relayrl.nets.stacked import StackedConv2d, StackedLinear, groups_to_sets, sets_to_groups


TRAINING_COPIES = 5  # online, target, gradients and Adam's two moments


class QNetwork(nn.Module):
    def __init__(
        self,
        n_sets: int,
        obs_shape: Sequence[int],
        n_actions: int,
        *,
        conv_channels: Sequence[int] = (32, 64, 64),
        kernel_size: int = 2,
        hiddens: Sequence[int] = (64, 256),
        head_hidden: int = 256,
        dueling: bool = True,
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.convs = nn.ModuleList()
        if len(self.obs_shape) == 3:
            height, width, channels = self.obs_shape
            for out_channels in conv_channels:
                self.convs.append(StackedConv2d(n_sets, channels, out_channels, kernel_size))
                height, width, channels = height - kernel_size + 1, width - kernel_size + 1, out_channels
            if height < 1 or width < 1:
                largest = 1 + (min(self.obs_shape[:2]) - 1) // len(conv_channels)
                raise ConfigError(
                    f"model.kernel_size={kernel_size} with {len(conv_channels)} unpadded convolutions leaves nothing of "
                    f"the {self.obs_shape[0]}x{self.obs_shape[1]} observations: use model.kernel_size <= {largest} "
                    f"or fewer model.conv_channels (images are read as height x width x channels: {self.obs_shape} has "
                    f"{self.obs_shape[2]} channels; an env whose images put channels first needs them transposed)"
                )
            features = height * width * channels
        elif len(self.obs_shape) == 1:
            features = self.obs_shape[0]
        else:
            raise ValueError(f"observations must be HxWxC or flat vectors, got shape {self.obs_shape}")
        self._check_fits(n_sets, features, hiddens, head_hidden, n_actions, dueling, kernel_size)
        self.fcs = nn.ModuleList()
        for i, width_out in enumerate(hiddens):
            self.fcs.append(StackedLinear(n_sets, features, width_out, inner=True))
            features = width_out
        self.advantage = nn.Sequential(
            StackedLinear(n_sets, features, head_hidden, inner=True), nn.ReLU(), StackedLinear(n_sets, head_hidden, n_actions)
        )
        self.value = (
            nn.Sequential(StackedLinear(n_sets, features, head_hidden, inner=True), nn.ReLU(), StackedLinear(n_sets, head_hidden, 1))
            if dueling
            else None
        )

    def _check_fits(
        self, n_sets: int, features: int, hiddens: Sequence[int], head_hidden: int, n_actions: int, dueling: bool, kernel_size: int
    ) -> None:
        """Refuses, before allocating them, layers that training cannot hold in this machine's
        memory: large images through unstrided convolutions make the first hidden layer huge."""
        sizes = [features, *hiddens]

        def stream(outputs: int) -> int:  # a head stream: torso output -> head_hidden -> outputs, with biases
            return (sizes[-1] + 1) * head_hidden + (head_hidden + 1) * outputs

        weights = sum(p.numel() for p in self.convs.parameters()) // n_sets
        weights += sum((a + 1) * b for a, b in zip(sizes, sizes[1:])) + stream(n_actions) + (stream(1) if dueling else 0)
        need = TRAINING_COPIES * 4 * n_sets * weights
        available = available_memory()
        if available is None or need <= available:
            return
        read = f"{features:,} features" if not self.convs else (
            f"the {self.obs_shape[0]}x{self.obs_shape[1]}x{self.obs_shape[2]} observations through unpadded stride-1 {kernel_size}x{kernel_size} "
            f"convolutions as {features:,} features"
        )
        raise ConfigError(
            f"the Q-network would hold {weights:,} weights per agent ({n_sets} agent{'s' if n_sets > 1 else ''}); training keeps {TRAINING_COPIES} copies (online, "
            f"target, gradients, Adam's two moments): {human_bytes(need)}, more than the {human_bytes(available)} of memory available. Its "
            f"first hidden layer ({sizes[1] if len(sizes) > 1 else head_hidden} units) reads {read}: shrink the observations in the env's "
            f"settings{', or train a policy gradient with on_policy.torso=nature_cnn (strided convolutions for screens)' if self.convs else ''}"
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``obs [P, B, *obs_shape]`` (any dtype) -> Q-values ``[P, B, n_actions]``."""
        x = obs.float()
        if self.convs:
            y = sets_to_groups(x)
            for conv in self.convs:
                y = conv(y).relu_()  # in place: a convolution's backward needs its input, not its output
            x = groups_to_sets(y, x.shape[0])
        x = x.reshape(x.shape[0], x.shape[1], -1)
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < len(self.fcs) - 1:  # the torso's last layer is the model output: no activation
                x = x.relu_()
        advantage = self.advantage(x)
        if self.value is None:
            return advantage
        return self.value(x) + advantage - advantage.mean(dim=-1, keepdim=True)
