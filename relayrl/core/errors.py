"""Errors with messages that name the problem and the fix."""


class RelayRLError(Exception):
    """Base class for errors raised by relayrl."""


class ConfigError(RelayRLError, ValueError):
    """A configuration value is unknown or invalid; raised before training starts."""


class MissingExtraError(RelayRLError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed. Install it with: pip install 'relayrl[{extra}]' "
            f"(from a checkout: pip install -e '.[{extra}]' -c constraints.txt)"
        )


class CheckpointError(RelayRLError):
    """A checkpoint is missing, incomplete or corrupt."""


class EnvError(RelayRLError):
    """An environment broke its contract (PettingZoo's, or a worker process failed)."""


class NonFiniteError(RelayRLError):
    """NaN or inf reached training: from an environment's output or a learner's loss."""
