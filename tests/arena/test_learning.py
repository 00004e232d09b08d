"""The local learner pool: per fragment every learner observes its policy's fragment and
takes the updates it earned, the exchanges run between observing and learning, and each
learner reports its metrics by name."""

import math

from relayrl.arena.collect import LocalCollector
from relayrl.arena.learning import LearnerPool
from relayrl.arena.policy import LearningPolicy
from relayrl.sharing.exchange import RelayBetween
from components import learner, venue


def test_step_observes_learns_and_relays_between_learners():
    where = venue(copies=2, matches=[{"runner": "a"}, {"runner": "b"}])
    spec = where.venv.groups[0]
    learners = {"a": learner(spec, 0, select="quantile", bandwidth=0.5), "b": learner(spec, 10, select="quantile", bandwidth=0.5)}
    pool = LearnerPool(learners, [RelayBetween(["a", "b"])])
    collector = LocalCollector({pid: LearningPolicy(one) for pid, one in learners.items()}, timer=None)
    collector.open(where)
    collector.reset(0)
    env_steps = agent_steps = 0
    for _ in range(20):
        got = collector.collect(2, env_steps)
        env_steps += got.env_steps
        agent_steps += pool.step(got.fragments, env_steps)
    assert agent_steps > 0 and all(one.updates > 0 for one in pool.values()), "past learning_starts every learner updated"
    reports = pool.report(env_steps)
    assert set(reports) == {"a", "b"} and math.isfinite(reports["a"]["td_loss"]) and reports["a"]["new_updates"] == learners["a"].updates
    exchanged = pool.exchange_report(reports)
    assert exchanged["relayed_out/a"] > 0 and exchanged["relayed_out/b"] > 0
    assert pool.exchange_columns() == ("relayed_out/a", "relayed_out/b", "relayed_out_bytes/a", "relayed_out_bytes/b", "relay_seconds")
    assert set(pool.acting_states()) == {"a", "b"}
    assert pool.report(env_steps)["a"]["new_updates"] == 0, "a report starts the tally again"
