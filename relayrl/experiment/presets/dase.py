"""DASE (paper 001): ``<env>-<algo>`` single agents and ``<env>-dase-<algo>[-<ablation>]``
for the Gymnasium tasks of its Tables 4-5 and appendix D, with the 100k shared replay, and
each with ``-1m`` for the 1M one.
"""

from typing import Any

from relayrl.experiment.presets.common import Presets, merge


# DASE (paper 001): Gymnasium v5 MuJoCo tasks (the paper used v2) and Box2D.
GYM_TASKS: dict[str, str] = {
    "halfcheetah": "HalfCheetah-v5",
    "swimmer": "Swimmer-v5",
    "ant": "Ant-v5",
    "hopper": "Hopper-v5",
    "walker2d": "Walker2d-v5",
    "humanoid": "Humanoid-v5",
    "lunarlander": "LunarLanderContinuous-v3",
    "bipedalwalker": "BipedalWalker-v3",
}
# Paper 001, Table 2 (C.4); SAC's reward scale is 5, 20 for Humanoid (C.5).
ACTOR_CRITIC: dict[str, dict[str, Any]] = {
    "td3": {"algo": "td3"},
    "ddpg": {"algo": "ddpg", "actor_lr": 1e-4, "critic_lr": 1e-3, "critic_weight_decay": 1e-2, "tau": 1e-3, "hidden": [400, 300], "normalize_obs": True},
    "sac": {"algo": "sac", "reward_scale": 5.0},
}
# 1M steps per agent, evaluated every 1000 steps over 10 episodes without noise (C.2, C.6).
DASE_RUN: dict[str, Any] = {
    "total_steps": 1_000_000,
    "report_interval": 1000,
    "eval": {"interval": 1000, "episodes": 10},
    # Runtime only (not hashed): a few minutes of a 2-core run, so a killed run loses little.
    "checkpoint_interval": 10_000,
}
DASE_SHARING: dict[str, Any] = {"select": "all", "replay": "shared", "correction": "dps", "divergence": "sym_kl"}
# name -> (description, K, sharing overrides): DASE and the ablations of Tables 4-5.
DASE_VARIANTS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "": ("DASE, K=2, DPS with symmetric KL (the reference code's divergence)", 2, {}),
    "-k5": ("DASE, K=5", 5, {}),
    "-k10": ("DASE, K=10", 10, {}),
    "-jsd": ("DASE, K=2, DPS with Monte-Carlo JSD (the paper's text)", 2, {"divergence": "jsd"}),
    "-kl": ("KL-DASE, K=2", 2, {"divergence": "kl"}),
    "-es": ("ES-DASE, K=2: shared replay without correction", 2, {"correction": "none"}),
    "-stdsq": ("DASE, K=2, DPS reference covariance sigma^2 I instead of sigma I", 2, {"reference_cov": "std_squared"}),
}
BUFFERS = {"": 100_000, "-1m": 1_000_000}


def dase_presets() -> Presets:
    table: Presets = {}
    for task, env_id in GYM_TASKS.items():
        for algo, learner in ACTOR_CRITIC.items():
            if algo == "sac" and task == "humanoid":
                learner = {**learner, "reward_scale": 20.0}
            for suffix, buffer in BUFFERS.items():
                ac = {**learner, "buffer_size": buffer}
                single = {**DASE_RUN, "env": {"name": "gym", "settings": {"env_id": env_id, "n_agents": 1}}, "actor_critic": ac}
                table[f"{task}-{algo}{suffix}"] = (f"single {algo.upper()} agent, replay {buffer:,} [{env_id}]", single)
                for variant, (description, k, sharing) in DASE_VARIANTS.items():
                    if algo != "td3" and variant:
                        continue  # the ablations are TD3's (paper 001, appendix F)
                    config = merge(single, {"env": {"settings": {"n_agents": k}}, "sharing": {**DASE_SHARING, **sharing}})
                    table[f"{task}-dase-{algo}{variant}{suffix}"] = (
                        f"{description}, {algo.upper()}, shared replay {buffer:,} [{env_id}]",
                        config,
                    )
    return table
