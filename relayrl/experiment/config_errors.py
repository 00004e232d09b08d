"""Config validation errors as a user reads them: the key path, the bad value, what is
allowed there."""

from typing import Any

from pydantic import ValidationError


def _tag(option: Any) -> str:
    """The tag of a union's option in an error's location: its class name."""
    return getattr(option, "__origin__", option).__name__


def _allowed_keys(root: Any, parts: list[str], tagged: dict[str, Any]) -> list[str]:
    """Field names of the config section at ``parts`` (for unknown-key messages); ``parts``
    keep the tag pydantic puts after a union (``env.SpreadSection.settings``), which picks
    the section; ``tagged``: the model of a tag that no option of the union names (a
    section the data chose, registered after the union was built)."""
    model = root
    parts = list(parts)
    while parts:
        part = parts.pop(0)
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        options = [a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")]
        if not options:
            return []
        chosen = [o for o in options if parts and _tag(o) == parts[0]]
        if not chosen and parts and parts[0] in tagged:
            chosen = [tagged[parts[0]]]
        if chosen:
            parts.pop(0)
        model = (chosen or options)[0]
    return sorted(model.model_fields)


def format_error(error: ValidationError, root: Any, hidden_tags: tuple[str, ...] = (), tagged: dict[str, Any] | None = None) -> str:
    """One line per error of validating ``root`` (a config model): ``hidden_tags`` are union
    tags pydantic puts in the location (an env section's name), which a user never wrote;
    ``tagged`` gives the model of a tag only the data decides (``_allowed_keys``)."""
    lines = ["invalid configuration:"]
    for item in error.errors():
        located = [str(p) for p in item["loc"] if not str(p).startswith("function-after")]
        # discriminated unions insert the tag ("pursuit") into the location: drop it
        parts = [p for i, p in enumerate(located) if not (i > 0 and located[i - 1] == "env" and p in hidden_tags)]
        path = f"{'.'.join(parts)}: " if parts else ""  # a check across sections names its keys in its message
        message = item["msg"].removeprefix("Value error, ")
        value = item.get("input")
        shown = "" if isinstance(value, dict) else f" (got {value!r})"
        hint = ""
        if item["type"] == "extra_forbidden":
            allowed = _allowed_keys(root, located[:-1], tagged or {})
            hint = f" -- unknown key; allowed here: {', '.join(allowed)}" if allowed else " -- unknown key"
        lines.append(f"  {path}{message}{shown}{hint}")
    return "\n".join(lines)
