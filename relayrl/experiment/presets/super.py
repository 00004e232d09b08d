"""SUPER (paper 000): ``<domain>-<variant>`` for Pursuit, Battle and Adversarial-Pursuit and
the algorithms of Table 1 and Figures 1-7; bandwidth sweeps ``pursuit-super-<mode>-bw<b>``;
co-evolving variants ``<domain>-coevolve-<variant>``; the opponents' pretraining
``<domain>-pretrain``; and the quickstart. Each preset is a set of overrides on RunConfig's
defaults, which are the paper's Pursuit values (Table 2; SPEC §1.1).
"""

from typing import Any

from relayrl.experiment.presets.common import Presets, merge


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
        f"dqn-{name}": (description.replace("DDQN", "DQN").replace("dueling DDQN", "DQN"), merge(PLAIN_DQN, overrides))
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


def super_presets() -> Presets:
    table: Presets = {}
    for domain, base in DOMAINS.items():
        for name, (description, overrides) in {**VARIANTS, **DQN_VARIANTS}.items():
            table[f"{domain}-{name}"] = (f"{description} [{domain}]", merge(base, overrides))
    for domain, base in COEVOLVING.items():
        for name in COEVOLVING_VARIANTS:
            description, overrides = VARIANTS[name]
            table[f"{domain}-coevolve-{name}"] = (f"{description}, co-evolving DDQN opponents [{domain}]", merge(base, overrides))
        pretrain = merge(base, {"policies": {}, "total_steps": PRETRAIN_STEPS[domain]})
        table[f"{domain}-pretrain"] = (f"both teams independent DDQN: the frozen opponents' pretraining [{domain}]", pretrain)
    for mode in SWEEP_MODES:
        for bandwidth in SWEEP_BANDWIDTHS:
            if bandwidth == DEFAULT_BANDWIDTH:
                continue  # that sweep point is pursuit-super-<mode> itself
            overrides = {"sharing": {"select": mode, "bandwidth": bandwidth}, "total_steps": SWEEP_STEPS}
            table[sweep_preset(mode, bandwidth)] = (
                f"SUPER-DDQN, {mode} selection, bandwidth {bandwidth:g} (sweep) [pursuit]",
                merge(PURSUIT_BASE, overrides),
            )
    table["pursuit-quickstart"] = ("SUPER-quantile on a small Pursuit with a small network, under a minute", QUICKSTART)
    return table
