"""Named presets, generated from one table of variants (no copy-pasted config files).

Pursuit presets carry the SUPER paper's Pursuit hyperparameters (Table 2; SPEC §1.1) and
the 800k env-step budget of its Table 1. Each preset is a set of overrides on RunConfig's
defaults, which already are the paper's Pursuit values.
"""

from typing import Any

from relayrl.core.errors import ConfigError
from relayrl.experiment.config import RunConfig, build_config

PURSUIT_BASE: dict[str, Any] = {"env": {"name": "pursuit"}, "total_steps": 800_000}

# name -> (description, overrides)
PURSUIT_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "dqn": ("independent DQN (no double, no dueling), PER", {"dqn": {"double_q": False, "dueling": False}}),
    "ddqn": ("independent dueling double DQN with PER: the paper's baseline", {}),
    "paramshare": ("one dueling DDQN drives all pursuers (batch N x 32)", {"dqn": {"param_sharing": True}}),
    "shareall": ("DDQN relaying every transition to every agent", {"sharing": {"select": "all"}}),
    "uniform": ("DDQN relaying a random 10% (ablation)", {"sharing": {"select": "uniform"}}),
    "super-quantile": ("SUPER-DDQN, quantile selection, bandwidth 0.1", {"sharing": {"select": "quantile"}}),
    "super-gaussian": ("SUPER-DDQN, gaussian selection, bandwidth 0.1", {"sharing": {"select": "gaussian"}}),
    "super-stochastic": ("SUPER-DDQN, stochastic selection, bandwidth 0.1", {"sharing": {"select": "stochastic"}}),
}

# A few minutes on 2 CPU cores: 8 pursuers on a small grid with few evaders.
QUICKSTART: dict[str, Any] = {
    "env": {
        "name": "pursuit",
        "settings": {"x_size": 8, "y_size": 8, "n_evaders": 4, "max_cycles": 100},
    },
    "sharing": {"select": "quantile"},
    "total_steps": 12_000,
    "dqn": {"epsilon_steps": 5_000, "buffer_size": 12_000},
    "report_interval": 1_000,
    "eval": {"interval": 4_000, "episodes": 10},
    "checkpoint_interval": 4_000,
}


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _presets() -> dict[str, tuple[str, dict[str, Any]]]:
    table = {
        f"pursuit-{name}": (description, _merge(PURSUIT_BASE, overrides))
        for name, (description, overrides) in PURSUIT_VARIANTS.items()
    }
    table["pursuit-quickstart"] = ("SUPER-quantile on a small Pursuit, a few minutes on a laptop", QUICKSTART)
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


def load_preset(name: str) -> RunConfig:
    return build_config(preset_dict(name))
