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
    """Applies ``dotted.key=value`` overrides to a nested dict (a copy); a number indexes a
    list (``rounds.0.steps=1000``), the list's length appends to it (``rounds.3={steps:
    1000}``); ``total_steps=N`` sets the budget, and where rounds change without it, it
    follows their sum. Unknown keys are caught by validation afterwards."""
    result = json.loads(json.dumps(data))
    keys = [item.split("=", 1)[0] for item in overrides]
    if any(key.split(".")[0] == "rounds" for key in keys) and "total_steps" not in keys:
        result.pop("total_steps", None)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not key=value (e.g. dqn.lr=1e-4)")
        key, text = item.split("=", 1)
        try:
            value = _parse_value(text)
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or "not a number or YAML value"
            raise ConfigError(f"override {item!r}: the value cannot be read ({problem}); e.g. 1e-4, true, [64, 256]") from None
        node: Any = result
        parts = key.split(".")
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) > len(node):
                    raise ConfigError(f"override {key!r}: {'.'.join(parts[:depth])} is a list of {len(node)}: index it 0..{len(node) - 1}, "
                                      f"or {len(node)} to append")
                index: Any = int(part)
                if index == len(node):  # appends (a resume may add rounds: rounds.3={steps: 1000} or rounds.3.steps=1000)
                    node.append(None if last else {})
            elif isinstance(node, dict):
                index = part
                if not last and node.get(part) is None:
                    node[part] = {}
            else:
                raise ConfigError(f"override {key!r}: {'.'.join(parts[:depth])} is a value, not a section")
            if last:
                node[index] = value
            else:
                node = node[index]
    return result
