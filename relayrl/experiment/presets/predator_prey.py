"""Value decomposition on Predator-Prey (paper 002, MAC-PO; paper 003, AccMER):
``predator-prey[-<setting>]-<algo>``."""

from typing import Any

from relayrl.experiment.presets.common import Presets, merge


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


def predator_prey_presets() -> Presets:
    table: Presets = {}
    for suffix, (setting, env, learner, run) in PREDATOR_PREY_SETTINGS.items():
        for name, (description, algo) in VALUE_DECOMPOSITION.items():
            config = merge(merge(PREDATOR_PREY_RUN, run), {"env": {"settings": env}, "qmix": {**learner, **algo}})
            table[f"predator-prey{suffix}-{name}"] = (f"{description}, {setting} [predator-prey]", config)
    return table
