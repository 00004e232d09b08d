"""Self-play (paper 004, section 5): a learning policy plays against snapshots of itself.

At the start of the run and at the end of every round the learner's networks are
snapshotted into the pool under a new id (``<learner>@<round>``: its networks when that
round began); the pool keeps the latest ``keep``. At the start of every round the opponent
(a ``snapshot`` policy of the learner) takes the networks of one snapshot drawn from the
pool: uniformly, or (``sampling: wins``) in proportion to how often that snapshot beat the
learner so far, (losses + 1) / (games + 2) of the learner against it, so that the
snapshots it still loses to come back more often. Per round, the table holds the opponent
drawn and the learner's wins, draws and losses against it (a game is an episode whose copy
gives ``groups[0]`` to the learner and ``groups[1]`` to the opponent, as in the
tournament); the pool and its records are kept in checkpoints.
"""

import copy
from typing import Any, Literal

import numpy as np
from pydantic import Field

from relayrl.arena.round import RoundContext
from relayrl.core.strict import Strict


class SelfPlayConfig(Strict):
    learner: str = Field(description="the learning policy")
    opponent: str = Field(description="the snapshot policy (kind: snapshot, of: the learner) that plays the drawn snapshots")
    groups: list[str] = Field(min_length=2, max_length=2, description="the learner's group, then the opponent's")
    keep: int = Field(5, ge=1, description="snapshots kept (the latest)")
    sampling: Literal["uniform", "wins"] = "uniform"


class SelfPlay:
    name = "selfplay"

    def __init__(self, config: SelfPlayConfig, seed: int) -> None:
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.pool: dict[str, dict[str, Any]] = {}  # snapshot id -> networks (a policy file's state), oldest first
        self.record: dict[str, list[int]] = {}  # snapshot id -> the learner's [wins, draws, losses] against it
        self.current = ""
        self.rows: list[dict[str, Any]] = []

    def _snapshot(self, context: RoundContext, label: int) -> None:
        snapshot = f"{self.config.learner}@{label}"
        self.pool[snapshot] = copy.deepcopy(context.policies[self.config.learner].policy_state())  # not the live tensors
        self.record.setdefault(snapshot, [0, 0, 0])
        while len(self.pool) > self.config.keep:
            del self.pool[next(iter(self.pool))]

    def on_round_start(self, context: RoundContext) -> None:
        if not self.pool:
            self._snapshot(context, context.index)
        ids = list(self.pool)
        if self.config.sampling == "wins":
            weights = np.array([(self.record[i][2] + 1) / (sum(self.record[i]) + 2) for i in ids])
            self.current = ids[int(self.rng.choice(len(ids), p=weights / weights.sum()))]
        else:
            self.current = ids[int(self.rng.integers(len(ids)))]
        context.policies[self.config.opponent].load_policy_state(self.pool[self.current], self.current)

    def on_round_end(self, context: RoundContext) -> None:
        assert context.results is not None
        counts = [0, 0, 0]
        for a, b, return_a, return_b in context.results.games(*self.config.groups):
            if (a, b) == (self.config.learner, self.config.opponent):
                counts[0 if return_a > return_b else 1 if return_a == return_b else 2] += 1
        self.record[self.current] = [r + c for r, c in zip(self.record.get(self.current, [0, 0, 0]), counts)]
        self.rows.append({"round": context.index, "opponent": self.current, "wins": counts[0], "draws": counts[1], "losses": counts[2], "pool": len(self.pool)})
        self._snapshot(context, context.index + 1)

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "pool": self.pool, "record": self.record, "current": self.current, "rows": self.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pool, self.record = dict(state["pool"]), {k: list(v) for k, v in state["record"].items()}
        self.current, self.rows = state["current"], list(state["rows"])
