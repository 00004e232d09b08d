"""Named presets, generated from one grid of domains x variants (no copy-pasted configs).

``<domain>-<variant>`` for the domains Pursuit, Battle and Adversarial-Pursuit and the
algorithms of the SUPER paper's Table 1 and Figures 1-7; bandwidth sweeps
``pursuit-super-<mode>-bw<b>``; co-evolving variants ``<domain>-coevolve-<variant>``; and the
opponents' pretraining ``<domain>-pretrain``. Each preset is a set of overrides on
RunConfig's defaults, which are the paper's Pursuit values (Table 2; SPEC §1.1).

DASE (paper 001): ``<env>-<algo>`` single agents and ``<env>-dase-<algo>[-<ablation>]``
for the Gymnasium tasks of its Tables 4-5 and appendix D, with the 100k shared replay,
and each with ``-1m`` for the 1M one.
"""

from pathlib import Path
from typing import Any

import yaml

from relayrl.arena.schemes.curriculum import curriculum
from relayrl.core.errors import ConfigError
from relayrl.experiment.config import RunConfig, build_config


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, section by section; an empty dict replaces a section."""
    merged = dict(base)
    for key, value in update.items():
        nested = isinstance(value, dict) and value and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if nested else value
    return merged


# Table 1 step counts (paper 000, appendix C.1): 800k Pursuit, 300k Battle and Adversarial-Pursuit.
PURSUIT_BASE: dict[str, Any] = {"env": {"name": "pursuit"}, "total_steps": 800_000}

# Battle and Adversarial-Pursuit hyperparameters (paper 000, Tables 3-4; SPEC §1.1); the
# report bin is the paper's 6000 env steps.
MAGENT_DQN: dict[str, Any] = {"lr": 1e-4, "buffer_size": 90_000, "target_update_interval": 1200, "fragment_length": 5}


# The opponents' learner: independent dueling double DQN with PER and no sharing, whatever
# the sharing team runs (paper 000, appendix C.3).
DDQN_OPPONENT: dict[str, Any] = {
    "dqn": {"double_q": True, "dueling": True, "prioritized": True, "param_sharing": False},
    "sharing": {"select": "none"},
}


def _magent_base(env: str, opponent: str, sharing_team: str, opponent_policy: dict[str, Any]) -> dict[str, Any]:
    """Each team driven by the policy of its name (the default match)."""
    return {
        "env": {"name": env},
        "total_steps": 300_000,
        "dqn": MAGENT_DQN,
        "policies": {opponent: opponent_policy},
        "report_group": sharing_team,
        "report_interval": 6000,
    }


# The opposing team (red in Battle, predators in Adversarial-Pursuit) is pretrained with
# independent DDQN alongside the sharing team, then frozen (paper 000, section 5.3); SPEC
# §1.1 pins the pretraining budget to 300k / 600k env steps.
DOMAINS: dict[str, dict[str, Any]] = {
    "pursuit": PURSUIT_BASE,
    "battle": _magent_base("battle", "red", "blue", {"kind": "frozen", "pretrained": "battle-pretrain", "dqn": DDQN_OPPONENT["dqn"]}),
    "adversarial-pursuit": _magent_base(
        "adversarial-pursuit",
        "predator",
        "prey",
        {"kind": "frozen", "pretrained": "adversarial-pursuit-pretrain", "dqn": DDQN_OPPONENT["dqn"]},
    ),
}
COEVOLVING: dict[str, dict[str, Any]] = {
    "battle": _magent_base("battle", "red", "blue", DDQN_OPPONENT),
    "adversarial-pursuit": _magent_base("adversarial-pursuit", "predator", "prey", DDQN_OPPONENT),
}
PRETRAIN_STEPS = {"battle": 300_000, "adversarial-pursuit": 600_000}

PLAIN_DQN = {"dqn": {"double_q": False, "dueling": False}}

# name -> (description, overrides): the algorithms of Table 1 and Figures 1-3 (dueling DDQN).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddqn": ("independent dueling double DQN with PER: the paper's baseline", {}),
    "paramshare": ("one dueling DDQN drives the whole team (batch N x 32)", {"dqn": {"param_sharing": True}}),
    "shareall": ("DDQN relaying every transition to every teammate", {"sharing": {"select": "all"}}),
    "uniform": ("DDQN relaying a random 10% (ablation)", {"sharing": {"select": "uniform"}}),
    "super-quantile": ("SUPER-DDQN, quantile selection, bandwidth 0.1", {"sharing": {"select": "quantile"}}),
    "super-gaussian": ("SUPER-DDQN, gaussian selection, bandwidth 0.1", {"sharing": {"select": "gaussian"}}),
    "super-stochastic": ("SUPER-DDQN, stochastic selection, bandwidth 0.1", {"sharing": {"select": "stochastic"}}),
    "super-gaussian-variance": (
        "SUPER-DDQN, gaussian selection with the reference code's variance scale",
        {"sharing": {"select": "gaussian", "gaussian_scale": "variance"}},
    ),
}
# Figure 6: the same comparison on plain DQN (no double, no dueling).
DQN_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "dqn": ("independent DQN (no double, no dueling), PER", PLAIN_DQN),
    **{
        f"dqn-{name}": (description.replace("DDQN", "DQN").replace("dueling DDQN", "DQN"), _merge(PLAIN_DQN, overrides))
        for name, (description, overrides) in VARIANTS.items()
        if name in ("paramshare", "shareall", "super-quantile", "super-gaussian", "super-stochastic")
    },
}
# Figures 4, 10, 11: target bandwidth sweep per selection mode (Pursuit, 250k).
SWEEP_BANDWIDTHS = (1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0)
SWEEP_MODES = ("quantile", "gaussian", "stochastic")
SWEEP_STEPS = 250_000
DEFAULT_BANDWIDTH = 0.1


def sweep_preset(mode: str, bandwidth: float) -> str:
    """The Pursuit preset of one sweep point (the default bandwidth is the main preset)."""
    return f"pursuit-super-{mode}" if bandwidth == DEFAULT_BANDWIDTH else f"pursuit-super-{mode}-bw{bandwidth:g}"


# Figure 7: co-evolving opponents, for the DDQN baseline and the sharing variants.
COEVOLVING_VARIANTS = ("ddqn", "shareall", "super-quantile", "super-gaussian", "super-stochastic")


# Under a minute on one CPU core: 8 pursuers on a small grid with few evaders, and a Q-network
# smaller than the paper's (2 convolutions of 16 and 32 channels, one hidden layer of 64).
# Measured on the project's 2-core VM, 3 seeds: 41-43 s and a greedy gap of +55 to +79 over
# the uniformly random policy, where the paper's network took 146 s for +33 (docs/results/quickstart).
QUICKSTART: dict[str, Any] = {
    "env": {
        "name": "pursuit",
        "settings": {"x_size": 8, "y_size": 8, "n_evaders": 4, "max_cycles": 100},
    },
    "model": {"conv_channels": [16, 32], "hiddens": [64], "head_hidden": 64},
    "sharing": {"select": "quantile"},
    "total_steps": 12_000,
    "dqn": {"epsilon_steps": 5_000, "buffer_size": 12_000},
    "report_interval": 1_000,
    "eval": {"interval": 4_000, "episodes": 10},
    "checkpoint_interval": 4_000,
}


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


def _gym_presets() -> dict[str, tuple[str, dict[str, Any]]]:
    table: dict[str, tuple[str, dict[str, Any]]] = {}
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
                    config = _merge(single, {"env": {"settings": {"n_agents": k}}, "sharing": {**DASE_SHARING, **sharing}})
                    table[f"{task}-dase-{algo}{variant}{suffix}"] = (
                        f"{description}, {algo.upper()}, shared replay {buffer:,} [{env_id}]",
                        config,
                    )
    return table


# Predator-Prey (paper 002; SPEC §1.3): the no-punishment setting (Table II: batch 256,
# decay 1.0) and the hard one (Table III: miscapture -1.5, batch 128, replay 10,000
# episodes, decay 0.8), and the hard one with a stag worth 10 (``-hard10``: the reference
# config that paper 002's code builds on; the paper's text says 1); the scaling runs
# (section V-D: 16 and 32 predators, batch 128, replay 10,000, decay 0.8, no punishment).
# 1M env steps (the reference config's budget), greedy evaluation of 32 episodes; reports
# every 10k env steps. The runner is that of
# pymarl2's `qmix_predator_prey` config, which the references build on: 8 env copies and
# one update per 8 finished episodes. Table II's replay of
# 100,000 padded episodes would take 20 GB here; 20,000 episodes is what one run of 1M env
# steps can fill when its episodes average 50 steps (docs/results/accmer/README.md).
# ``-small`` is ours: a game of minutes on one core (5x5, 4 predators, 2 stags, 50 steps),
# scaled down with it (batch 32 and replay 1,000 episodes, epsilon over 10k steps, targets
# every 20 episodes), for comparisons this machine can repeat over seeds.
PREDATOR_PREY_SETTINGS: dict[str, tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "": ("8 predators, no punishment", {}, {"batch_size": 256, "buffer_size": 20_000}, {}),
    "-hard": ("8 predators, miscapture -1.5", {"miscapture": -1.5}, {"batch_size": 128, "buffer_size": 10_000, "reuse_decay": 0.8}, {}),
    "-hard10": (
        "8 predators, miscapture -1.5, a stag worth 10 (the reference config's)",
        {"miscapture": -1.5, "reward_stag": 10.0},
        {"batch_size": 128, "buffer_size": 10_000, "reuse_decay": 0.8},
        {},
    ),
    "-16": ("16 predators, no punishment", {"n_predators": 16}, {"batch_size": 128, "buffer_size": 10_000, "reuse_decay": 0.8}, {}),
    "-32": ("32 predators, no punishment", {"n_predators": 32}, {"batch_size": 128, "buffer_size": 10_000, "reuse_decay": 0.8}, {}),
    "-small": (
        "4 predators and 2 stags on 5x5, 50 steps (ours, small)",
        {"n_predators": 4, "n_stags": 2, "x_size": 5, "y_size": 5, "max_cycles": 50},
        {"batch_size": 32, "buffer_size": 1000, "epsilon_steps": 10_000, "target_update_episodes": 20, "max_episode_length": 50},
        {
            "env": {"num_envs": 1},
            "qmix": {"updates_per_episode": 1.0},
            "total_steps": 40_000,
            "report_interval": 2000,
            "eval": {"interval": 2000, "episodes": 32},
            "checkpoint_interval": 10_000,
        },
    ),
}
VALUE_DECOMPOSITION: dict[str, tuple[str, dict[str, Any]]] = {
    "iql": ("recurrent independent Q-learning", {"mixer": "none"}),
    "vdn": ("VDN", {"mixer": "vdn"}),
    "qmix": ("QMIX", {"mixer": "qmix"}),
    "macpo": ("QMIX with MAC-PO weights", {"mixer": "qmix", "weighting": "macpo"}),
    "accmer": ("QMIX with MAC-PO weights and AccMER reuse (alpha 0.5)", {"mixer": "qmix", "weighting": "macpo", "sampler": "reuse"}),
}
PREDATOR_PREY_RUN: dict[str, Any] = {
    "env": {"name": "predator-prey", "num_envs": 8},
    "qmix": {"updates_per_episode": 0.125},
    "total_steps": 1_000_000,
    "report_interval": 10_000,
    "eval": {"interval": 10_000, "episodes": 32},
    "checkpoint_interval": 50_000,
}


def _predator_prey_presets() -> dict[str, tuple[str, dict[str, Any]]]:
    table: dict[str, tuple[str, dict[str, Any]]] = {}
    for suffix, (setting, env, learner, run) in PREDATOR_PREY_SETTINGS.items():
        for name, (description, algo) in VALUE_DECOMPOSITION.items():
            config = _merge(_merge(PREDATOR_PREY_RUN, run), {"env": {"settings": env}, "qmix": {**learner, **algo}})
            table[f"predator-prey{suffix}-{name}"] = (f"{description}, {setting} [predator-prey]", config)
    return table


# Arena schemes (paper 004, section 5), each against a baseline with the same env steps.
# Curriculum (Fig. 8 in spirit): the small Predator-Prey game whose miscapture punishment
# rises round by round to the hard setting's -1.5, against 80k env steps at -1.5 from the
# start (docs/results/arena/README.md).
CURRICULUM_STEPS = 80_000
CURRICULUM_PUNISHMENTS = [0.0, -0.5, -1.0, -1.5]
# Population-based training (Fig. 13 in spirit): three QMIX teams on the small game, one env
# copy each, started at learning rates 3e-4, 1e-3 and 3e-3, exploit and explore every 10k
# env steps, against one QMIX team (learning rate 1e-3) on the same three copies.
PBT_STEPS = 80_000
PBT_ROUNDS = 8
PBT_LEARNING_RATES = {"p0": 3e-4, "p1": 1e-3, "p2": 3e-3}
# The same two schemes on Pursuit: the quickstart's small game (8 pursuers, 4 evaders, 8x8,
# 100-step episodes, the small Q-network) with SUPER-quantile teams. Curriculum: catches by
# n_catch pursuers on an evader's cell (no surround), n_catch 3, 4, 5, 6 over four rounds
# of 15k env steps, against 60k env steps at 6 from the start (from scratch, 30k steps
# reach a greedy ~43 at 3 and ~-36 at 6). PBT: three teams starting at bandwidths 0.03, 0.1
# and 0.3, learning rate, exploration and bandwidth perturbed, against one team at 0.1 on
# the same three copies.
PURSUIT_CURRICULUM_STEPS = 60_000
PURSUIT_CATCHES = [3, 4, 5, 6]
PURSUIT_PBT_BANDWIDTHS = {"p0": 0.03, "p1": 0.1, "p2": 0.3}
# Round-robin tournament (Fig. 5): four independent-DDQN teams on MAgent2 battle 12x12 (2 v 2,
# 200-step games) and a uniformly random team as the fixed baseline every rating is read
# against; all 20 ordered pairings each round, 6 rounds of 20k env steps.
TOURNAMENT_POLICIES = ["p1", "p2", "p3", "p4"]
TOURNAMENT_ROUNDS = 6
TOURNAMENT_ROUND_STEPS = 20_000
# Self-play (section 5): blue (independent DDQN, 2 v 2 battle) trains against snapshots of
# itself, against training versus a frozen pretrained red (both teams co-trained, seed 0);
# both are evaluated against the same held-out red (the co-trained red of seed 1).
SELFPLAY_STEPS = 100_000
SELFPLAY_ROUNDS = 5


def _arena_presets() -> dict[str, tuple[str, dict[str, Any]]]:
    small = PREDATOR_PREY_SETTINGS["-small"]
    _, env, learner, run = small
    base = _merge(_merge(PREDATOR_PREY_RUN, run), {"env": {"settings": env}, "qmix": {**learner, **VALUE_DECOMPOSITION["qmix"][1]}})
    base = _merge(base, {"total_steps": CURRICULUM_STEPS, "checkpoint_interval": CURRICULUM_STEPS // len(CURRICULUM_PUNISHMENTS)})
    rounds = curriculum(CURRICULUM_STEPS // len(CURRICULUM_PUNISHMENTS), {"miscapture": CURRICULUM_PUNISHMENTS})
    hard = _merge(base, {"env": {"settings": {"miscapture": -1.5}}})
    three = _merge(base, {"env": {"num_envs": len(PBT_LEARNING_RATES)}, "total_steps": PBT_STEPS, "checkpoint_interval": PBT_STEPS // PBT_ROUNDS})
    population = {
        **three,
        "policies": {pid: {"qmix": {"lr": lr}} for pid, lr in PBT_LEARNING_RATES.items()},
        "match": [{"predator": pid} for pid in PBT_LEARNING_RATES],
        "rounds": [{"steps": PBT_STEPS // PBT_ROUNDS}] * PBT_ROUNDS,
        "pbt": {"population": list(PBT_LEARNING_RATES), "fraction": 0.34},
    }
    entrants = [*TOURNAMENT_POLICIES, "random"]
    tournament = {
        "env": {"name": "battle", "settings": {"map_size": 12, "max_cycles": 200}},
        "dqn": MAGENT_DQN,
        "policies": {**{pid: {} for pid in TOURNAMENT_POLICIES}, "random": {"kind": "random"}},
        "tournament": {"policies": entrants, "groups": ["red", "blue"]},
        "scale": 1,
        "rounds": [{"steps": TOURNAMENT_ROUND_STEPS}] * TOURNAMENT_ROUNDS,
        "report_group": "blue",
        "report_interval": 4000,
        "checkpoint_interval": TOURNAMENT_ROUND_STEPS,
        "eval": {"interval": 0},
    }
    small_battle = {
        "env": {"name": "battle", "num_envs": 4, "settings": {"map_size": 12, "max_cycles": 200}},
        "dqn": MAGENT_DQN,
        "total_steps": SELFPLAY_STEPS,
        "report_group": "blue",
        "report_interval": 4000,
        "checkpoint_interval": SELFPLAY_STEPS // SELFPLAY_ROUNDS,
    }
    held_out = {
        "interval": 10_000,
        "episodes": 32,
        "policies": {"held-out": {"kind": "frozen", "pretrained": "battle-2v2-pretrain", "pretrained_seed": 1, "pretrained_policy": "red", "dqn": DDQN_OPPONENT["dqn"]}},
        "match": [{"blue": "blue", "red": "held-out"}],
    }
    pretrain = {**small_battle, "policies": {"red": DDQN_OPPONENT}, "eval": {"interval": 0}}
    selfplay = {
        **small_battle,
        "policies": {"blue": {}, "red": {"kind": "snapshot", "of": "blue"}},
        "selfplay": {"learner": "blue", "opponent": "red", "groups": ["blue", "red"], "keep": 5},
        "rounds": [{"steps": SELFPLAY_STEPS // SELFPLAY_ROUNDS}] * SELFPLAY_ROUNDS,
        "eval": held_out,
    }
    frozen = {
        **small_battle,
        "policies": {"red": {"kind": "frozen", "pretrained": "battle-2v2-pretrain", "pretrained_seed": 0, "dqn": DDQN_OPPONENT["dqn"]}},
        "eval": held_out,
    }
    catching = _merge(
        QUICKSTART,
        {
            "env": {"settings": {"surround": False, "n_catch": PURSUIT_CATCHES[-1]}},
            "total_steps": PURSUIT_CURRICULUM_STEPS,
            "eval": {"interval": 3_000, "episodes": 10},
            "checkpoint_interval": PURSUIT_CURRICULUM_STEPS // len(PURSUIT_CATCHES),
        },
    )
    catch_rounds = curriculum(PURSUIT_CURRICULUM_STEPS // len(PURSUIT_CATCHES), {"n_catch": PURSUIT_CATCHES})
    pursuit_three = _merge(
        QUICKSTART,
        {
            "env": {"num_envs": len(PURSUIT_PBT_BANDWIDTHS)},
            "total_steps": PBT_STEPS,
            "eval": {"interval": 4_000, "episodes": 12},
            "checkpoint_interval": PBT_STEPS // PBT_ROUNDS,
        },
    )
    pursuit_population = {
        **pursuit_three,
        "policies": {pid: {"sharing": {"select": "quantile", "bandwidth": b}} for pid, b in PURSUIT_PBT_BANDWIDTHS.items()},
        "match": [{"pursuer": pid} for pid in PURSUIT_PBT_BANDWIDTHS],
        "rounds": [{"steps": PBT_STEPS // PBT_ROUNDS}] * PBT_ROUNDS,
        "pbt": {"population": list(PURSUIT_PBT_BANDWIDTHS), "fraction": 0.34, "perturb": ["lr", "exploration", "bandwidth"]},
    }
    return {
        "pursuit-small-curriculum-super": (
            "SUPER-quantile, small Pursuit, catches by 3, 4, 5, 6 pursuers over four rounds (curriculum)",
            {**catching, "rounds": catch_rounds},
        ),
        "pursuit-small-catch6-super": ("SUPER-quantile, small Pursuit, catches by 6 pursuers from the start (the curriculum's baseline)", catching),
        "pursuit-small-pbt-super": (
            "three SUPER teams (bandwidths 0.03, 0.1, 0.3), population-based training of lr, exploration and bandwidth every 10k env steps (small Pursuit)",
            pursuit_population,
        ),
        "pursuit-small-single-super": ("one SUPER team (bandwidth 0.1) on the three env copies of the population run (its baseline)", pursuit_three),
        "battle-2v2-pretrain": ("both teams independent DDQN on battle 2 v 2: the frozen and held-out reds of the self-play example", pretrain),
        "battle-2v2-selfplay": ("blue DDQN against snapshots of itself, one drawn per 20k env steps (battle 2 v 2)", selfplay),
        "battle-2v2-vs-frozen": ("blue DDQN against a frozen co-trained red (battle 2 v 2): self-play's baseline", frozen),
        "battle-2v2-round-robin": ("four DDQN teams and a random one, every pairing each round, Elo ratings (MAgent2 battle 2 v 2)", tournament),
        "predator-prey-small-pbt-qmix": ("three QMIX teams, population-based training every 10k env steps (small Predator-Prey)", population),
        "predator-prey-small-single-qmix": ("one QMIX team on the three env copies of the population run (its baseline)", three),
        "predator-prey-small-hard-qmix": ("QMIX, small Predator-Prey, miscapture -1.5 from the start (the curriculum's baseline)", hard),
        "predator-prey-small-curriculum-qmix": (
            "QMIX, small Predator-Prey, miscapture 0, -0.5, -1.0, -1.5 over four rounds (curriculum)",
            {**base, "rounds": rounds},
        ),
    }


# Policy gradients on the SEAC paper's tasks (Christianos et al. 2020), with its settings
# (``relayrl.algos.sections.ALGO_DEFAULTS``: 5-step rollouts of 4 env copies, a network per
# agent) and its episode limits: 25 steps in Level-Based Foraging, 500 in the warehouse.
# The ids are those of lbforaging 2.0 and rware 2.0 (the paper's v0 / v1 dynamics, renamed).
PG_TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "lbf-8x8-2p-2f": ("Foraging-8x8-2p-2f-v3", {"max_episode_steps": 25}),  # ours: not the paper's, learnt in minutes here
    "lbf-8x8-2p-2f-coop": ("Foraging-8x8-2p-2f-coop-v3", {"max_episode_steps": 25}),
    "lbf-10x10-3p-3f": ("Foraging-10x10-3p-3f-v3", {"max_episode_steps": 25}),
    "lbf-12x12-2p-1f": ("Foraging-12x12-2p-1f-v3", {"max_episode_steps": 25}),
    "rware-tiny-2ag": ("rware-tiny-2ag-v2", {"max_steps": 500}),
    "rware-tiny-4ag": ("rware-tiny-4ag-v2", {"max_steps": 500}),
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
    "total_steps": 2_000_000,
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


def _policy_gradient_presets() -> dict[str, tuple[str, dict[str, Any]]]:
    table: dict[str, tuple[str, dict[str, Any]]] = {}
    for task, (env_id, kwargs) in PG_TASKS.items():
        base = _merge(PG_RUN, {"env": {"name": env_id, "settings": {"kwargs": kwargs}}})
        for name, (description, overrides) in PG_VARIANTS.items():
            if name == "mappo":  # neither env has a global state: the critic sees every agent's observation
                overrides = _merge(overrides, {"on_policy": {"critic_input": "joint_obs"}})
            table[f"{task}-{name}"] = (f"{description} [{env_id}]", _merge(base, overrides))
    for name in ("ippo", "mappo"):
        description, overrides = PG_VARIANTS[name]
        table[f"spread-{name}"] = (f"{description} [mpe2.simple_spread_v3, 3 agents]", _merge(SPREAD, overrides))
    # SUPER's Table 1 SEAC row (paper 000): Pursuit's 800k env steps with SEAC's settings
    for name in ("ia2c", "seac"):
        description, overrides = PG_VARIANTS[name]
        table[f"pursuit-{name}"] = (f"{description} [pursuit]", _merge(_merge(PURSUIT_BASE, {"env": {"num_envs": 4}}), overrides))
    return table


def _presets() -> dict[str, tuple[str, dict[str, Any]]]:
    table: dict[str, tuple[str, dict[str, Any]]] = {}
    for domain, base in DOMAINS.items():
        for name, (description, overrides) in {**VARIANTS, **DQN_VARIANTS}.items():
            table[f"{domain}-{name}"] = (f"{description} [{domain}]", _merge(base, overrides))
    for domain, base in COEVOLVING.items():
        for name in COEVOLVING_VARIANTS:
            description, overrides = VARIANTS[name]
            table[f"{domain}-coevolve-{name}"] = (f"{description}, co-evolving DDQN opponents [{domain}]", _merge(base, overrides))
        pretrain = _merge(base, {"policies": {}, "total_steps": PRETRAIN_STEPS[domain]})
        table[f"{domain}-pretrain"] = (f"both teams independent DDQN: the frozen opponents' pretraining [{domain}]", pretrain)
    for mode in SWEEP_MODES:
        for bandwidth in SWEEP_BANDWIDTHS:
            if bandwidth == DEFAULT_BANDWIDTH:
                continue  # that sweep point is pursuit-super-<mode> itself
            overrides = {"sharing": {"select": mode, "bandwidth": bandwidth}, "total_steps": SWEEP_STEPS}
            table[sweep_preset(mode, bandwidth)] = (
                f"SUPER-DDQN, {mode} selection, bandwidth {bandwidth:g} (sweep) [pursuit]",
                _merge(PURSUIT_BASE, overrides),
            )
    table["pursuit-quickstart"] = ("SUPER-quantile on a small Pursuit with a small network, under a minute", QUICKSTART)
    table.update(_gym_presets())
    table.update(_predator_prey_presets())
    table.update(_arena_presets())
    table.update(_policy_gradient_presets())
    return table


PRESETS = _presets()


def preset_names() -> list[str]:
    return list(PRESETS)


def preset_dict(name: str) -> dict[str, Any]:
    """The preset's full config as a nested dict (every key present, so overrides can use any path)."""
    if name not in PRESETS:
        close = [p for p in PRESETS if name.split("-")[-1] in p] or list(PRESETS)
        raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(close)} (relayrl list shows all)")
    _, overrides = PRESETS[name]
    return build_config({**overrides, "preset": name}).model_dump(mode="json")


def config_dict(source: str) -> dict[str, Any]:
    """A preset by name, or a YAML file of config keys (``relayrl train my_run.yaml``): what
    it leaves out takes the defaults, and its ``preset`` names the run (default: the file's
    stem)."""
    if not source.endswith((".yaml", ".yml")):
        return preset_dict(source)
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"config file {source} does not exist (a preset name has no .yaml suffix: relayrl list shows them)")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{source} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping of config keys (env:, dqn:, sharing:, ...), not a {type(data).__name__}")
    return {"preset": path.stem, **data}  # validated once the command line's overrides are applied


def load_preset(name: str) -> RunConfig:
    return build_config(preset_dict(name))
