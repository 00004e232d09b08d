"""Curriculum (paper 004, section 5, Fig. 8): the env's settings change from round to round,
given as a list of values per setting or as a function of the round index."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any


def curriculum(
    steps: int | Sequence[int],
    settings: Mapping[str, Sequence[Any]] | Callable[[int], dict[str, Any]],
    rounds: int | None = None,
) -> list[dict[str, Any]]:
    """The ``rounds`` of a config: round i trains ``steps`` (or ``steps[i]``) env steps with
    the env settings ``{key: values[i]}`` (every list as long as the rounds) or
    ``settings(i)``. ``rounds`` defaults to the length of the lists or of ``steps``."""
    lengths = {len(v) for v in settings.values()} if isinstance(settings, Mapping) else set()
    if not isinstance(steps, int):
        lengths.add(len(steps))
    if rounds is None and len(lengths) == 1:
        (rounds,) = lengths
    if rounds is None or lengths - {rounds}:
        raise ValueError(f"curriculum of {rounds or 'unknown'} rounds with lists of lengths {sorted(lengths)}: give one value per round")
    per_round = [steps] * rounds if isinstance(steps, int) else list(steps)
    if isinstance(settings, Mapping):
        return [{"steps": per_round[i], "env": {k: v[i] for k, v in settings.items()}} for i in range(rounds)]
    return [{"steps": per_round[i], "env": dict(settings(i))} for i in range(rounds)]
