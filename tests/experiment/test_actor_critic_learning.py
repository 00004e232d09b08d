"""Each actor-critic learner learns: Pendulum-v1 (swing-up; random policies score about
-1200, a learned one better than -400) within 12k env steps. Slow: run with -m slow."""

import pytest

from relayrl.experiment import build_run, build_config
from relayrl.experiment.presets.dase import ACTOR_CRITIC


def _pendulum(algo: str, k: int, correction: str | None) -> dict:
    sharing = {"select": "all", "replay": "shared", "correction": correction} if correction else {}
    return {
        "preset": f"pendulum-{algo}",
        "env": {"name": "gym", "settings": {"env_id": "Pendulum-v1", "n_agents": k}},
        "total_steps": 12_000,
        # the paper's settings per learner (Table 2), except that Pendulum's rewards are
        # already of order 1-10: SAC's reward scale 5 is for MuJoCo
        "actor_critic": {**ACTOR_CRITIC[algo], "random_steps": 1000, **({"reward_scale": 1.0} if algo == "sac" else {})},
        "sharing": sharing,
        "report_interval": 1000,
        "eval": {"interval": 1000, "episodes": 5},
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("algo", "k", "correction"),
    [("td3", 1, None), ("ddpg", 1, None), ("sac", 1, None), ("td3", 2, "dps"), ("td3", 2, "none")],
    ids=["td3", "ddpg", "sac", "dase-td3", "es-dase-td3"],
)
def test_learns_pendulum(algo, k, correction):
    run = build_run(build_config(_pendulum(algo, k, correction)), None, verbose=False)
    rows = run.train()
    first, last = rows[0]["eval_reward_mean"], max(r["eval_reward_mean"] for r in rows[-3:])
    print(f"{algo} K={k} {correction}: eval {first:.0f} -> {[round(r['eval_reward_mean']) for r in rows]}")
    assert first < -900 and last > -400
