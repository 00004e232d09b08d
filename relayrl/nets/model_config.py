"""The ``model`` config section: the Q-network's shape (``relayrl.nets.qnetwork`` builds it)."""

from pydantic import Field

from relayrl.core.strict import PositiveInt, Strict


class ModelConfig(Strict):
    """Q-network shape (SPEC §1.1): convolutions for HxWxC observations, then ``hiddens``."""

    conv_channels: list[PositiveInt] = [32, 64, 64]
    kernel_size: int = Field(2, ge=1)
    hiddens: list[PositiveInt] = [64, 256]
    head_hidden: int = Field(256, ge=1)
