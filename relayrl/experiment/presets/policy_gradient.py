"""Policy gradients: SEAC and IA2C on the SEAC paper's tasks (``<task>-<variant>``), IPPO and
MAPPO on MPE spread (``spread-<variant>``), and SUPER's Table 1 SEAC row (``pursuit-seac``,
``battle-seac``, ``adversarial-pursuit-seac``)."""

from typing import Any

from relayrl.experiment.presets.common import Presets, merge
from relayrl.experiment.presets.super import DOMAINS


# Policy gradients on the SEAC paper's tasks (Christianos et al. 2020), with its settings
# (``relayrl.algos.sections.ALGO_DEFAULTS``: 5-step rollouts of 4 env copies, a network per
# agent) and its episode limits: 25 steps in Level-Based Foraging, 500 in the warehouse.
# The ids are those of lbforaging 2.0 and rware 2.0 (the paper's v0 / v1 dynamics, renamed).
# Budgets are what this project's 2-core machine finishes in hours, not the paper's 50M
# (LBF) and 40-150M (RWARE) env steps: task -> (env id, env kwargs, env steps).
PG_TASKS: dict[str, tuple[str, dict[str, Any], int]] = {
    "lbf-8x8-2p-2f": ("Foraging-8x8-2p-2f-v3", {"max_episode_steps": 25}, 300_000),  # ours: not the paper's, learnt in minutes here
    "lbf-8x8-2p-2f-coop": ("Foraging-8x8-2p-2f-coop-v3", {"max_episode_steps": 25}, 2_000_000),
    "lbf-10x10-3p-3f": ("Foraging-10x10-3p-3f-v3", {"max_episode_steps": 25}, 2_000_000),
    "lbf-12x12-2p-1f": ("Foraging-12x12-2p-1f-v3", {"max_episode_steps": 25}, 2_000_000),
    "rware-tiny-2ag": ("rware-tiny-2ag-v2", {"max_steps": 500}, 2_000_000),
    "rware-tiny-4ag": ("rware-tiny-4ag-v2", {"max_steps": 500}, 2_000_000),
}
PG_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ia2c": ("independent A2C, a network per agent", {"on_policy": {"algo": "a2c"}}),
    "seac": ("SEAC: A2C plus every other agent's steps weighted by pi_i / pi_k", {"on_policy": {"algo": "seac"}, "sharing": {"select": "all"}}),
    "seac-q10": ("SEAC taking each agent's 10% of steps of largest |advantage| (quantile selection)", {
        "on_policy": {"algo": "seac"}, "sharing": {"select": "quantile", "bandwidth": 0.1}}),
    "seac-q01": ("SEAC taking each agent's 1% of steps of largest |advantage| (quantile selection)", {
        "on_policy": {"algo": "seac"}, "sharing": {"select": "quantile", "bandwidth": 0.01}}),
    "ippo": ("IPPO: one PPO network for the agents, each critic on its own observation", {"on_policy": {"algo": "ppo"}}),
    "mappo": ("MAPPO: PPO with a critic on the env's state", {"on_policy": {"algo": "mappo"}}),
}
PG_RUN: dict[str, Any] = {
    "env": {"num_envs": 4},
    "report_interval": 20_000,
    "eval": {"interval": 20_000, "episodes": 20},
    "checkpoint_interval": 100_000,
}
# MPE cooperative navigation (3 agents, 3 landmarks, 25 steps), the MAPPO paper's MPE setting
# (Yu et al. 2022): one network for the agents, rollouts of whole episodes from many copies.
SPREAD: dict[str, Any] = {
    "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": False}, "num_envs": 16},
    "on_policy": {"rollout_length": 50},
    "total_steps": 2_000_000,
    "report_interval": 20_000,
    "eval": {"interval": 20_000, "episodes": 32},
    "checkpoint_interval": 100_000,
}


def policy_gradient_presets() -> Presets:
    table: Presets = {}
    for task, (env_id, kwargs, steps) in PG_TASKS.items():
        base = merge(PG_RUN, {"env": {"name": env_id, "settings": {"kwargs": kwargs}}, "total_steps": steps})
        for name, (description, overrides) in PG_VARIANTS.items():
            if name == "mappo":  # neither env has a global state: the critic sees every agent's observation
                overrides = merge(overrides, {"on_policy": {"critic_input": "joint_obs"}})
            table[f"{task}-{name}"] = (f"{description} [{env_id}]", merge(base, overrides))
    for name in ("ippo", "mappo"):
        description, overrides = PG_VARIANTS[name]
        table[f"spread-{name}"] = (f"{description} [mpe2.simple_spread_v3, 3 agents]", merge(SPREAD, overrides))
    # SUPER's Table 1 SEAC row (paper 000): each domain's team and budget (beside the frozen
    # DQN opponents in Battle and Adversarial-Pursuit) with SEAC's settings
    for domain, base in DOMAINS.items():
        for name in ("ia2c", "seac"):
            description, overrides = PG_VARIANTS[name]
            table[f"{domain}-{name}"] = (f"{description} [{domain}]", merge(merge(base, {"env": {"num_envs": 4}}), overrides))
    return table
