"""Named components (algorithms, selectors, environments) that join by registering, so no
layer above them lists their kinds."""

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

T = TypeVar("T")


class Registry(Generic[T]):
    """``name -> entry``; an unknown name is an error that lists the registered ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Withdraws an entry (a plugin unloaded, a test undoing its registration)."""
        del self._entries[name]

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; registered: {', '.join(sorted(self._entries))}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)


@dataclass(frozen=True)
class Lazy:
    """A callable named by its import path ``package.module:name``, imported at its first
    call: an entry registers what it is without importing its code (the networks and torch),
    so validating a config or listing the registries stays light."""

    path: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.path.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


def registered(registry: Registry[T], accepts: Callable[[T], bool] | None = None) -> AfterValidator:
    """Validates a config value that names an entry of ``registry`` (those ``accepts`` takes,
    where given) when the config is validated, so an entry registered later is accepted; a
    wrong name fails as a ``Literal`` of the names would, listing them."""

    def check(name: str) -> str:
        names = [n for n in registry if accepts is None or accepts(registry[n])]
        if name not in names:
            quoted = [repr(n) for n in names]
            expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else "".join(quoted)
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return name

    return AfterValidator(check)
