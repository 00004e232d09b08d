"""Centralised critics: the AI Arena's cooperative navigation with its three entity
assignments (paper 004, Fig. 11: ``navigation-{masac,sac-entity,sac-joint}``), MADDPG,
MATD3 and MASAC on MPE's continuous spread (``spread-continuous-<algo>``) at HARL's
settings, and SUPER's Table 1 MADDPG row (``pursuit-maddpg``, ``battle-maddpg``,
``adversarial-pursuit-maddpg``: the MADDPG team beside the frozen DQN opponents)."""

from typing import Any

from relayrl.experiment.presets.common import Presets, merge
from relayrl.experiment.presets.super import DOMAINS, MAGENT_DQN

# Paper 004's MASAC (its public code, ``arena5/algos/masac``): one common twin critic on the
# summed reward with every actor stepped through it at the agents' current actions, Adam 1e-3
# everywhere, gamma 0.99, Polyak 0.995, a fixed temperature of 0.2, batches of 100 from a 1M
# replay, 10,000 random steps, 256-256 ReLU networks, no gradient clipping, and per worker 50
# updates after every 50 of its env steps, the gradients averaged over the 8 workers: here one
# update of 8 x 100 rows per step of the 8 copies. The paper's curves run to about 18M env steps.
ARENA_MASAC: dict[str, Any] = {
    "algo": "masac", "critic": "common", "actor_lr": 1e-3, "critic_lr": 1e-3, "tau": 0.005, "gamma": 0.99, "initial_alpha": 0.2, "auto_alpha": False,
    "batch_size": 800, "buffer_size": 1_000_000, "random_steps": 10_000, "hidden": [256, 256],
    "fragment_length": 400, "updates_per_fragment": 50, "max_grad_norm": None,
}
NAVIGATION_RUN: dict[str, Any] = {
    "env": {"name": "cooperative-navigation", "num_envs": 8},
    "centralised": ARENA_MASAC,
    "total_steps": 18_000_000,
    "report_interval": 30_000,
    "eval": {"interval": 60_000, "episodes": 16},
    "checkpoint_interval": 300_000,
}
# name -> (description, overrides): Fig. 11's three assignments of the 3 entities, as the Arena
# writes them: a match (which policy drives each entity, a bracket one worker of its own) or, for
# one agent of all three, the env's joint_agent (the paper's "slight environment modification").
NAVIGATION_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "masac": (
        "MASAC: one worker drives the 3 entities of each of 8 copies, one common critic on every entity's observation and action",
        {"policies": {"masac": {}}, "match": [{"agent": "masac"}]},
    ),
    "sac-entity": (
        "SAC per entity: each entity a worker of its own of one single-agent SAC policy (one actor and one twin critic on an "
        "entity's own observation and action), 6 copies as the paper's 18 workers",
        # a step of the 6 copies is 18 rows of this policy: 50 updates per 50 such steps, each on 100 rows per worker
        {"env": {"num_envs": 6}, "centralised": {"critic": "own", "batch_size": 1800, "fragment_length": 900},
         "policies": {"sac": {}}, "match": [{"agent": [["sac"]] * 3}]},
    ),
    "sac-joint": (
        "one SAC agent whose observation and action are the 3 entities' together, 8 copies",
        # one agent: its joint critic is the team's
        {"env": {"settings": {"joint_agent": True}}, "centralised": {"critic": "joint"}, "policies": {"sac": {}}, "match": [{"agent": "sac"}]},
    ),
}

# HARL's MADDPG, MATD3 and (tuned) HASAC settings on MPE's continuous spread (its public
# configs): 20 copies, 25-step episodes, 10,000 random steps, 50 updates of 1,000 rows per
# 1,000 env steps, no gradient clipping, 5M env steps (10M for HASAC; its 20-step returns).
# Like HARL, one critic for the team learns the agents' rewards summed (its MPE wrapper gives
# every agent that sum); the actors step through it with the other agents' replayed actions
# (MADDPG, MATD3: its MA runner) or with every agent's current one (MASAC; HASAC refreshes
# them agent by agent in a random order, which is not built).
SPREAD_CONTINUOUS: dict[str, Any] = {
    "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": True}, "num_envs": 20},
    "centralised": {"max_grad_norm": None, "critic": "common"},
    "total_steps": 5_000_000,
    "report_interval": 25_000,
    "eval": {"interval": 50_000, "episodes": 40},
    "checkpoint_interval": 250_000,
}
SPREAD_ALGOS: dict[str, tuple[str, dict[str, Any]]] = {
    "maddpg": ("MADDPG", {"centralised": {"algo": "maddpg"}}),
    "matd3": ("MATD3", {"centralised": {"algo": "matd3"}}),
    "masac": ("MASAC", {"centralised": {"algo": "masac", "n_step": 20}, "total_steps": 10_000_000}),
}


# SUPER's Table 1 MADDPG (paper 000, Table 2: actor and critic Adam 2.5e-4, a fully connected
# 64-64 network, tau 0.015, actor feature regularisation 1e-3 on the logits; the rest RLlib's
# MADDPG defaults, which the paper ran: batches of 1,024 from a 1M replay after 25,600 env
# steps, one update per 100 env steps of one env copy, gradient norm 0.5, gamma 0.99). In
# Battle and Adversarial-Pursuit a joint row of 6 or 8 agents' image observations takes 30-40
# KB, so their replay keeps the DQN teams' 90,000 rows (3.7 GB) instead of 1M (40 GB).
SUPER_MADDPG: dict[str, Any] = {
    "centralised": {
        "algo": "maddpg", "actor_lr": 2.5e-4, "critic_lr": 2.5e-4, "hidden": [64, 64], "tau": 0.015, "logits_penalty": 1e-3,
        "batch_size": 1024, "buffer_size": 1_000_000, "random_steps": 25_600, "fragment_length": 100, "updates_per_fragment": 1,
        "max_grad_norm": 0.5, "gamma": 0.99,
    },
}


def centralised_presets() -> Presets:
    table: Presets = {}
    for name, (description, overrides) in NAVIGATION_VARIANTS.items():
        table[f"navigation-{name}"] = (f"{description} [cooperative-navigation]", merge(NAVIGATION_RUN, overrides))
    for name, (label, overrides) in SPREAD_ALGOS.items():
        table[f"spread-continuous-{name}"] = (f"{label}, HARL's MPE settings [mpe2.simple_spread_v3, continuous]", merge(SPREAD_CONTINUOUS, overrides))
    for domain, base in DOMAINS.items():
        maddpg = SUPER_MADDPG if domain == "pursuit" else merge(SUPER_MADDPG, {"centralised": {"buffer_size": MAGENT_DQN["buffer_size"]}})
        table[f"{domain}-maddpg"] = (f"MADDPG with a fully connected network, the paper's settings (Table 1's row) [{domain}]", merge(base, maddpg))
    return table
