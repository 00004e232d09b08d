"""Errors with messages that name the problem and the fix."""


class RelayRLError(Exception):
    """Base class for errors raised by relayrl."""


class RelayRLWarning(UserWarning):
    """A setting or an env that works but will disappoint: the message names why and the fix.
    The command line prints it as ``warning: <message>``, without Python's source line."""


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


class SpaceError(EnvError, TypeError):
    """An environment's observation or action space is one relayrl cannot act on or read
    (raised where the env is wrapped, and refused as itself, not as its settings')."""


class PolicyError(RelayRLError):
    """A user's policy (a scripted one) raised or returned actions the env cannot take."""


class StopError(RelayRLError):
    """A run stopped by something its user fixes between two tries (its ``fix``): the run
    keeps its last checkpoint and metrics and resumes once fixed."""

    fix = "fix it"


class NonFiniteError(StopError):
    """NaN or inf reached training: from an environment's output or a learner's loss."""

    fix = "Fix the source (the environment's outputs; for a diverging loss a lower learning rate)"


class HookError(StopError):
    """A round hook raised or could not be called with the round's context."""

    fix = "Fix the hook"
