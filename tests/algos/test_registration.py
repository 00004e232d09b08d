"""An algorithm joins by registering (``ALGORITHMS``); an entry registered again under a new
name keeps its ``base`` and trains as the built-in it copies: its section's defaults, the
keys it reads and its update variant (TD3's twin critics, MATD3's delay, A2C's returns)."""

import math

import pytest

from relayrl.algos import ALGORITHMS
from relayrl.experiment import build_config, build_run
from tiny_runs import small_sections

TIMING = ("sps", "updates_per_s", "wall_s", "sample_share")
RUN = {"total_steps": 240, "report_interval": 80, "checkpoint_interval": 10**6, "eval": {"interval": 240, "episodes": 2}}


def _metrics(algo: str) -> list[dict]:
    actions = "discrete" if "discrete" in ALGORITHMS[algo].capabilities.actions else "box"
    env = {"name": "testenvs.screens", "settings": {"scaled": True, "actions": actions}, "num_envs": 2}
    run = build_run(build_config({**RUN, "env": env, **small_sections(algo)}), None, verbose=False)
    try:
        rows = run.train()
    finally:
        run.close()
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items() if k not in TIMING} for row in rows]


@pytest.mark.parametrize("base", ["dqn", "td3", "matd3", "a2c"])
def test_an_algorithm_registered_again_under_a_new_name_trains_as_the_one_it_copies(register, base):
    register(ALGORITHMS, f"{base}-again", ALGORITHMS[base])
    copied, built_in = _metrics(f"{base}-again"), _metrics(base)
    assert copied[-1]["updates"] > 0
    assert copied == built_in


def test_a_copy_takes_its_base_sections_defaults_and_keys(register):
    register(ALGORITHMS, "td3-again", ALGORITHMS["td3"])
    register(ALGORITHMS, "a2c-again", ALGORITHMS["a2c"])
    register(ALGORITHMS, "seac-again", ALGORITHMS["seac"])
    register(ALGORITHMS, "dqn-again", ALGORITHMS["dqn"])
    box = {"env": {"name": "testenvs.screens", "settings": {"scaled": True, "actions": "box"}}}
    assert build_config({**box, "actor_critic": {"algo": "td3-again", "policy_delay": 3}}).actor_critic.policy_delay == 3
    with pytest.raises(Exception, match="policy_delay is read by td3 only, not by algo=ddpg"):
        build_config({**box, "actor_critic": {"algo": "ddpg", "policy_delay": 3}})
    a2c = build_config({"env": {"name": "simple-spread"}, "on_policy": {"algo": "a2c-again"}}).on_policy
    assert (a2c.rollout_length, a2c.clip, a2c.param_sharing) == (5, None, False)
    with pytest.raises(Exception, match="seac weighs other agents' steps"):
        build_config({"env": {"name": "simple-spread"}, "on_policy": {"algo": "seac-again", "param_sharing": True}})
    assert build_config({"dqn": {"algo": "dqn-again"}}).algorithm()[0] == "dqn-again"
    with pytest.raises(Exception, match=r"dqn\.algo: Input should be 'dqn' or 'dqn-again' \(got 'td4'\)"):
        build_config({"dqn": {"algo": "td4"}})


def test_an_entry_is_checked_where_it_is_made():
    from dataclasses import replace

    from relayrl.algos import AlgorithmEntry, Capabilities

    td3 = ALGORITHMS["td3"]
    with pytest.raises(ValueError, match=r"an algorithm's section 'my_section' is not one of relayrl's config sections \(dqn, qmix, actor_critic, on_policy, centralised\)"):
        replace(td3, section="my_section")
    with pytest.raises(TypeError, match="an algorithm's capabilities are a relayrl.algos.Capabilities, not dict"):
        AlgorithmEntry(td3.make, td3.fields, "actor_critic", {"actions": {"continuous"}})
    with pytest.raises(TypeError, match="an algorithm's make must be callable"):
        AlgorithmEntry("relayrl.algos.td3:make_td3", td3.fields, "actor_critic", Capabilities(frozenset({"continuous"})))
