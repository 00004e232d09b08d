"""Round-robin tournament (paper 004, section 5, Fig. 5): every pairing of N policies plays
in every round, each policy on each side, and the round's win/draw/loss counts and Elo
ratings are the scheme's table.

A game is one episode of a copy whose match gives each of the two groups to one policy;
the group with the larger summed reward wins (equal: a draw). Elo (Elo 1978): for each game
in the order the episodes ended, E_a = 1 / (1 + 10^((R_b - R_a) / 400)) and R_a += K (S_a - E_a)
with S = 1, 0.5, 0 for a win, draw, loss, and the same for b.
"""

from itertools import permutations
from typing import Any

from pydantic import Field

from relayrl.arena.match import Match
from relayrl.arena.round import RoundContext
from relayrl.core.strict import Strict


class TournamentConfig(Strict):
    policies: list[str] = Field(min_length=2, description="ids of the policies that meet")
    groups: list[str] = Field(min_length=2, max_length=2, description="the two opposing groups, e.g. [red, blue]")
    k_factor: float = Field(32.0, gt=0, description="Elo's K")
    initial_rating: float = 1000.0


def round_robin(policies: list[str], groups: list[str]) -> list[Match]:
    """Every ordered pairing: each policy meets each other on both sides (N (N - 1) matches)."""
    return [{groups[0]: a, groups[1]: b} for a, b in permutations(policies, 2)]


def expected_score(rating: float, other: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((other - rating) / 400.0))


class Tournament:
    name = "tournament"

    def __init__(self, config: TournamentConfig, seed: int) -> None:
        self.config = config
        self.ratings = dict.fromkeys(config.policies, config.initial_rating)
        self.rows: list[dict[str, Any]] = []

    def on_round_start(self, context: RoundContext) -> None:
        return None

    def on_round_end(self, context: RoundContext) -> None:
        assert context.results is not None
        counts = {pid: {"wins": 0, "draws": 0, "losses": 0} for pid in self.config.policies}
        k = self.config.k_factor
        for a, b, return_a, return_b in context.results.games(*self.config.groups):
            if a not in self.ratings or b not in self.ratings:
                continue
            score = 1.0 if return_a > return_b else 0.5 if return_a == return_b else 0.0
            for pid, s in ((a, score), (b, 1.0 - score)):
                counts[pid]["wins" if s == 1.0 else "draws" if s == 0.5 else "losses"] += 1
            expected = expected_score(self.ratings[a], self.ratings[b])
            self.ratings[a] += k * (score - expected)
            self.ratings[b] -= k * (score - expected)
        for pid in self.config.policies:
            self.rows.append({"round": context.index, "policy": pid, **counts[pid], "elo": round(self.ratings[pid], 3)})

    def state_dict(self) -> dict[str, Any]:
        return {"ratings": self.ratings, "rows": self.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ratings, self.rows = dict(state["ratings"]), list(state["rows"])
