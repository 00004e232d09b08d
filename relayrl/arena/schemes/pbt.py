"""Population-based training (Jaderberg et al. 2017, "Population Based Training of Neural
Networks", exploit and explore; paper 004, appendix A.1.1).

At the end of every round the population's learning policies are ranked by the mean
return of the round's episodes (each member's group return where it drove the whole
group). Exploit: each member of the bottom ``fraction`` (at least one) takes the networks,
targets and optimiser state of a member of the top ``fraction`` drawn uniformly (its own
replay, exploration RNG and counters stay), its exploration scale and, where members relay
(SUPER), its sharing bandwidth. Explore: each hyperparameter in ``perturb`` (the learning
rates; the scale of the epsilon schedule of DQN and QMIX members; the bandwidth b,
kept at most 1) is multiplied by a factor drawn from ``factors`` (Jaderberg et al.'s
perturb: 0.8 or 1.2). With ``survivors: k`` a round is a generation of paper 004's
evolution over PPO (appendix A.1.1): the k best members continue and every other member
takes the networks of one of them; ``perturb: []`` copies without exploring. Learning
rates live in the optimisers' state (an annealed on-policy learner's base rate in the
learner's), the exploration scale in the learner's and the
bandwidth in its selector's, so a checkpoint keeps all three; the lineage (who copied
whom, each member's hyperparameters and return per round) is the scheme's table.
"""

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from relayrl.arena.round import RoundContext
from relayrl.core.strict import Strict


class PBTConfig(Strict):
    population: list[str] = Field(min_length=2, description="ids of the learning policies that compete (same algorithm)")
    fraction: float = Field(0.25, gt=0, le=0.5, description="bottom (replaced) and top (copied) share of the population")
    survivors: int | None = Field(None, ge=1, description="instead of fraction: the best k continue, every other member copies one of them")
    factors: list[float] = Field(default_factory=lambda: [0.8, 1.2], min_length=1, description="perturbation factors")
    perturb: list[Literal["lr", "exploration", "bandwidth"]] = Field(
        default_factory=lambda: ["lr"],
        description="what explore perturbs: the learning rates, the exploration's scale, the sharing bandwidth (members that relay); [] copies only",
    )

    @model_validator(mode="after")
    def _survivors(self) -> "PBTConfig":
        if self.survivors is not None and self.survivors >= len(self.population):
            raise ValueError(f"pbt.survivors={self.survivors} leaves no member to replace in a population of {len(self.population)}: choose 1 to {len(self.population) - 1}")
        return self


class PopulationBasedTraining:
    """The exploit-and-explore step of ``config`` over a run's policies."""

    name = "pbt"

    def __init__(self, config: PBTConfig, seed: int) -> None:
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.rows: list[dict[str, Any]] = []  # the lineage, one row per member and round

    def on_round_start(self, context: RoundContext) -> None:
        return None

    def on_round_end(self, context: RoundContext) -> None:
        assert context.results is not None
        returns = context.results.policy_returns()
        members = self.config.population
        means = np.array([returns[m].mean() if m in returns and returns[m].size else -np.inf for m in members])
        order = np.argsort(-means, kind="stable")  # best first; a member without episodes ranks last
        if self.config.survivors is not None:
            top, bottom = order[: self.config.survivors], order[self.config.survivors :]
        else:
            k = max(1, int(len(members) * self.config.fraction))
            top, bottom = order[:k], order[len(members) - k :]
        learners = {m: context.policies[m].learner for m in members}
        sources = {members[b]: members[int(self.rng.choice(top))] for b in bottom}
        for member, source in sources.items():
            learners[member].copy_networks_from(learners[source])  # with the optimiser state: the learning rates
            values = learners[source].hyperparameters()
            for key in ("lr", "exploration", "bandwidth"):  # explore: one factor each, drawn in this order
                if key in self.config.perturb:
                    values[key] *= float(self.rng.choice(self.config.factors))
            if "bandwidth" in values:
                values["bandwidth"] = min(1.0, values["bandwidth"])
            learners[member].set_hyperparameters(values)
        for m, mean in zip(members, means):
            found = learners[m].hyperparameters()
            self.rows.append(
                {
                    "round": context.index,
                    "member": m,
                    "mean_return": float(mean) if np.isfinite(mean) else float("nan"),
                    "episodes": int(returns[m].size) if m in returns else 0,
                    "copied_from": sources.get(m, ""),
                    "lr": found["lr"],
                    **({"exploration_scale": found["exploration"]} if "exploration" in self.config.perturb else {}),
                    **({"bandwidth": found["bandwidth"]} if "bandwidth" in self.config.perturb else {}),
                }
            )

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "rows": self.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.rows = list(state["rows"])
