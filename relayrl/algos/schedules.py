"""Exploration schedules."""


def linear_schedule(start: float, end: float, duration: int, step: int) -> float:
    """Linear from ``start`` to ``end`` over ``duration`` steps, then constant (RLlib's
    EpsilonGreedy; SUPER paper Table 2: 0.1 -> 0.001 over 100k env steps)."""
    if duration <= 0:
        return end
    fraction = min(1.0, max(0.0, step / duration))
    return start + fraction * (end - start)
