"""What every preset table shares: the table's type and the override merge."""

from typing import Any

# name -> (description, overrides on RunConfig's defaults)
Presets = dict[str, tuple[str, dict[str, Any]]]


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, section by section; an empty dict replaces a section."""
    merged = dict(base)
    for key, value in update.items():
        nested = isinstance(value, dict) and value and isinstance(merged.get(key), dict)
        merged[key] = merge(merged[key], value) if nested else value
    return merged
