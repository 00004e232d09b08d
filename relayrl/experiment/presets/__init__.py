"""Named presets, generated from one grid of tasks x variants per paper (no copy-pasted configs).

Each module holds one paper's table: ``super`` (paper 000), ``dase`` (paper 001),
``predator_prey`` (papers 002-003), ``arena`` (paper 004), ``policy_gradient`` (SEAC,
IPPO, MAPPO), ``centralised`` (MADDPG, MATD3, MASAC; paper 004's navigation) and
``jaxmarl`` (JaxMARL's MPE configs, which ``relayrl bench`` times). A preset
is a description and a set of overrides on RunConfig's defaults.
"""

import difflib
from pathlib import Path
from typing import Any

import yaml

from relayrl.core.errors import ConfigError
from relayrl.experiment.config import RunConfig, build_config, validate_config
from relayrl.experiment.presets.arena import arena_presets
from relayrl.experiment.presets.centralised import centralised_presets
from relayrl.experiment.presets.common import Presets
from relayrl.experiment.presets.dase import dase_presets
from relayrl.experiment.presets.jaxmarl import jaxmarl_presets
from relayrl.experiment.presets.policy_gradient import policy_gradient_presets
from relayrl.experiment.presets.predator_prey import predator_prey_presets
from relayrl.experiment.presets.super import super_presets

PRESETS: Presets = {**super_presets(), **dase_presets(), **predator_prey_presets(), **arena_presets(), **policy_gradient_presets(), **centralised_presets(), **jaxmarl_presets()}


def preset_names() -> list[str]:
    return list(PRESETS)


def preset_dict(name: str) -> dict[str, Any]:
    """The preset's full config as a nested dict (every key present, so overrides can use any path)."""
    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=8, cutoff=0.6)
        hint = f"the closest: {', '.join(close)}; " if close else ""
        raise ConfigError(f"unknown preset {name!r}; {hint}relayrl list shows all {len(PRESETS)} (or give a config file, FILE.yaml)")
    _, overrides = PRESETS[name]
    return validate_config({**overrides, "preset": name}).model_dump(mode="json")


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
        with path.open() as handle:  # the error names the file
            data = yaml.safe_load(handle)
    except yaml.YAMLError as error:
        raise ConfigError(f"{source} is not valid YAML: {error}") from None
    if data is None or data == {}:
        raise ConfigError(f"{source} holds no config keys: give at least the env and a learner section (env:, dqn:, ...), "
                          "or train a preset by name (relayrl list shows them)")
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping of config keys (env:, dqn:, sharing:, ...), not a {type(data).__name__}")
    refuse_partial_preset(data, f"{source} names", "a file's")
    return {"preset": path.stem, **data}  # validated once the command line's overrides are applied


def refuse_partial_preset(data: dict[str, Any], names: str = "the config names", whose: str = "a config's") -> None:
    """A config that names a registered preset does not start from it: the keys it leaves out
    take the defaults, so the run would train other settings than its name says. Such a
    config is refused where a user gives one (a file, or a dict to ``build_config`` or
    ``train``); a run's own config.yaml, every key given, trains as it is, and a saved config
    that an older revision wrote without newer keys still resumes (``validate_config``)."""
    name = data.get("preset")
    left_out = set(RunConfig.model_fields) - set(data) - ({"total_steps"} if data.get("rounds") else set())  # the rounds' sum
    if name in PRESETS and left_out:
        raise ConfigError(
            f"{names} preset {name!r}, but {whose} preset: only names its run, whose other keys take the defaults, "
            f"not that preset's settings: to change the preset, relayrl train {name} key=value ... on the command line, "
            f"build_config(apply_overrides(preset_dict({name!r}), ['key=value', ...])) in Python; to name this run, give preset: another name"
        )


def load_preset(name: str) -> RunConfig:
    return build_config(preset_dict(name))
