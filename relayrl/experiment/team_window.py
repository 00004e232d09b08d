"""Learning accumulators of one team between two metric reports."""

from dataclasses import dataclass, field


@dataclass
class TeamWindow:
    updates: int = 0
    loss_sum: float = 0.0
    grad_norm_sum: float = 0.0
    extra_sums: dict[str, float] = field(default_factory=dict)  # learner-specific (actor loss, DPS weight)
    extra_counts: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.extra_sums[key] = self.extra_sums.get(key, 0.0) + value
        self.extra_counts[key] = self.extra_counts.get(key, 0) + 1

    def means(self) -> dict[str, float]:
        return {k: self.extra_sums[k] / self.extra_counts[k] for k in self.extra_sums}
