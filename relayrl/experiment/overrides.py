"""``dotted.key=value`` overrides from the command line, applied to a config dict."""

import json
from typing import Any

import yaml

from relayrl.core.errors import ConfigError


def _parse_value(text: str) -> Any:
    """Command-line values are numbers or YAML values: 1e-4, 250000, true, [0, 1], null."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Applies ``dotted.key=value`` overrides to a nested dict (a copy); ``total_steps=N``
    sets the budget. Unknown keys are caught by validation afterwards."""
    result = json.loads(json.dumps(data))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value (e.g. dqn.lr=1e-4)")
        key, text = item.split("=", 1)
        try:
            value = _parse_value(text)
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or "not a number or YAML value"
            raise ConfigError(f"override {item!r}: the value cannot be read ({problem}); e.g. 1e-4, true, [64, 256]") from None
        node = result
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {key!r}: {part!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return result
