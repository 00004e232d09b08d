"""Population-based training (Jaderberg et al. 2017, "Population Based Training of Neural
Networks", exploit and explore; paper 004, appendix A.1.1).

At the end of every round the population's learning policies are ranked by the mean
return of the round's episodes (each member's group return where it drove the whole
group). Exploit: each member of the bottom ``fraction`` (at least one) takes the networks,
targets and optimiser state of a member of the top ``fraction`` drawn uniformly (its own
replay, exploration RNG and counters stay), its exploration scale and, where members relay
(SUPER), its sharing bandwidth. Explore: each hyperparameter in ``perturb`` (the learning
rates; the scale of the exploration schedule, epsilon or action noise; the bandwidth b,
kept at most 1) is multiplied by a factor drawn from ``factors`` (Jaderberg et al.'s
perturb: 0.8 or 1.2). Learning rates live in the optimisers' state, the exploration scale
in the learner's and the bandwidth in its selector's, so a checkpoint keeps all three; the
lineage (who copied whom, each member's hyperparameters and return per round) is the
scheme's table.
"""

import copy
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field

from relayrl.arena.round import RoundContext
from relayrl.core.settings import Strict
from relayrl.sharing.selectors import FixedSelector, Selector


OWN = ("rng", "generator", "updates")  # what a member keeps of its own: exploration RNGs, update counter


class PBTConfig(Strict):
    population: list[str] = Field(min_length=2, description="ids of the learning policies that compete (same algorithm)")
    fraction: float = Field(0.25, gt=0, le=0.5, description="bottom (replaced) and top (copied) share of the population")
    factors: list[float] = Field(default_factory=lambda: [0.8, 1.2], min_length=1, description="perturbation factors")
    perturb: list[Literal["lr", "exploration", "bandwidth"]] = Field(
        default_factory=lambda: ["lr"],
        min_length=1,
        description="what explore perturbs: the learning rates, the exploration's scale, the sharing bandwidth (members that relay)",
    )


def _optimizers(algorithm: Any) -> list[torch.optim.Optimizer]:
    """Every optimiser the algorithm holds, in attribute order."""
    return [value for value in vars(algorithm).values() if isinstance(value, torch.optim.Optimizer)]


def learning_rate(algorithm: Any) -> float:
    return float(_optimizers(algorithm)[0].param_groups[0]["lr"])


def _selector(learner: Any) -> Selector | None:
    """The learner's selection rule where it relays a share b of its transitions, else None."""
    return None if isinstance(learner.selector, FixedSelector) else learner.selector


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
        k = max(1, int(len(members) * self.config.fraction))
        top, bottom = order[:k], order[len(members) - k :]
        algorithms = {m: context.policies[m].learner.algorithm for m in members}
        learners = {m: context.policies[m].learner for m in members}
        sources = {members[b]: members[int(self.rng.choice(top))] for b in bottom}
        for member, source in sources.items():
            own = algorithms[member].state_dict()
            # a deep copy: an optimiser's load_state_dict keeps the given state tensors, which
            # the two members would then update in place together
            taken = copy.deepcopy({key: value for key, value in algorithms[source].state_dict().items() if key not in OWN})
            algorithms[member].load_state_dict({**own, **taken})
            learners[member].exploration_scale = learners[source].exploration_scale
            selector, source_selector = _selector(learners[member]), _selector(learners[source])
            if selector is not None and source_selector is not None:
                selector.bandwidth = source_selector.bandwidth
            if "lr" in self.config.perturb:
                factor = float(self.rng.choice(self.config.factors))
                for optimizer in _optimizers(algorithms[member]):
                    for group in optimizer.param_groups:
                        group["lr"] *= factor
            if "exploration" in self.config.perturb:
                learners[member].exploration_scale *= float(self.rng.choice(self.config.factors))
            if "bandwidth" in self.config.perturb:
                selector.bandwidth = min(1.0, selector.bandwidth * float(self.rng.choice(self.config.factors)))
        for m, mean in zip(members, means):
            self.rows.append(
                {
                    "round": context.index,
                    "member": m,
                    "mean_return": float(mean) if np.isfinite(mean) else float("nan"),
                    "episodes": int(returns[m].size) if m in returns else 0,
                    "copied_from": sources.get(m, ""),
                    "lr": learning_rate(algorithms[m]),
                    **({"exploration_scale": learners[m].exploration_scale} if "exploration" in self.config.perturb else {}),
                    **({"bandwidth": _selector(learners[m]).bandwidth} if "bandwidth" in self.config.perturb else {}),
                }
            )

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "rows": self.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.rows = list(state["rows"])
