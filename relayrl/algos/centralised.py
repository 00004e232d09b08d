"""The off-policy learner of centralised critics (MADDPG, MATD3, MASAC): the one off-policy
learner (``off_policy.py``) whose replay rows are joint transitions.

A critic that sees every agent's observation and action needs the agents' steps of one env
copy together, so each replay row holds one env step of one copy with the agent axis
inside it: ``obs [N, ...]``, ``action [N, ...]``, ``reward [N]``, ``next_obs [N, ...]``,
``discount [N]`` and ``alive [N]`` (which agents the step has). The algorithm draws
``batch_size`` such rows per update, ``[1, B, N, ...]``; acting stays per agent. Sharing
between teammates does not apply (they already learn from one replay); between teams of
the same task it does: with ``sharing.select`` a team is one sender of joint rows, ranks
its new rows by the mean |TD error| of their agents' critics (SUPER's score, paper 000
section 4.1, over a joint step) and relays the rows it selects to the other teams of
``relay.between``, which store them in their replays as their own.
"""

from typing import Any

import numpy as np

from relayrl.algos.algorithm import ALGORITHMS
from relayrl.algos.nstep import Transitions
from relayrl.algos.off_policy import OffPolicyLearner, replay_plan
from relayrl.core.specs import GroupSpec
from relayrl.replay import FieldSpec, ReplayPlan
from relayrl.sharing.config import SharingConfig


def joint_plan(spec: GroupSpec, section: Any) -> ReplayPlan:
    """One buffer of ``buffer_size`` joint rows: every field of the per-agent layout with
    the agent axis inside the row, and the agents' ``alive`` mask."""
    per_agent = replay_plan(spec, section.algo, section.learner_params(), SharingConfig())
    n = spec.n_agents
    fields = {name: FieldSpec((n, *field.shape), field.dtype) for name, field in per_agent.fields.items()}
    fields["alive"] = FieldSpec((n,), np.bool_)
    return ReplayPlan(1, section.buffer_size, fields)


class CentralisedLearner(OffPolicyLearner):
    """The off-policy learner with joint replay rows (see the module's docstring)."""

    not_exchanged = "trains centralised critics on its group's joint transitions"

    def __init__(self, spec: GroupSpec, algo: str, config: Any, sharing: SharingConfig, device: Any, seeds: list[int], *args: Any, **options: Any) -> None:
        super().__init__(spec, algo, config, sharing, device, seeds, *args, **options)
        plan = ALGORITHMS[algo].plan(spec, config)
        self.fields = plan.fields
        self.replay = plan.build(seed=self.replay_seed)
        self.batch_size = config.batch_size  # joint rows, each with every agent's step
        if self.relay is not None:  # the team is one sender of joint rows, to other teams only
            self.selector, self.relay = sharing.selection(spec.name, 1, seeds[2])

    def _per_set(self, t: Transitions) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``[T, E, N, ...]`` transitions -> joint rows ``[1, T E, N, ...]``; a row is kept
        where any of its agents has a step."""
        rows = {k: v.reshape(1, -1, *v.shape[2:]) for k, v in self._stored(t).items()}
        alive = t.valid.reshape(1, -1, t.valid.shape[2])
        rows["alive"] = alive
        return rows, alive.any(-1)

    def _scores(self, rows: dict[str, np.ndarray]) -> np.ndarray:
        """Each new joint row's mean |TD error| over the agents that have a step in it ``[1, M]``."""
        td = np.abs(self.algorithm.td_error(rows))  # [N, M]
        alive = rows["alive"][0].T  # [N, M]
        return ((td * alive).sum(axis=0) / np.maximum(alive.sum(axis=0), 1))[None]

    join_shared_replay = shared_source = shared_rows = shared_size = OffPolicyLearner._not_exchanged
