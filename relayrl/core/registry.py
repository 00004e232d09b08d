"""Named components (algorithms, selectors, environments) that join by registering, so no
layer above them lists their kinds."""

import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from relayrl.core.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """``name -> entry``; an unknown name is an error that lists the registered ones. Each
    entry remembers the module that registered it, so that other processes of a run
    (Ray's actors) import the same modules (``plugin_modules``)."""

    def __init__(self, kind: str, check: Callable[[str, Any], None] | None = None) -> None:
        """``check(name, entry)`` refuses an entry that is not one (``of_type``), at ``add``."""
        self.kind = kind
        self.check = check
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        REGISTRIES.append(self)

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        if self.check is not None:
            self.check(name, entry)
        self._entries[name] = entry
        self._origins[name] = sys._getframe(1).f_globals.get("__name__", "")
        return entry

    def remove(self, name: str) -> None:
        """Withdraws an entry (a plugin unloaded, a test undoing its registration)."""
        del self._entries[name]
        del self._origins[name]

    def origin(self, name: str) -> str:
        """The module whose code registered ``name`` (``__main__``: a script's own body)."""
        return self._origins[name]

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; registered: {', '.join(sorted(self._entries))}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)


def of_type(kind: type | str) -> Callable[[str, Any], None]:
    """A registry's check: entries are instances of ``kind`` ("callable": any callable)."""

    def check(name: str, entry: Any) -> None:
        fits = callable(entry) if kind == "callable" else isinstance(entry, kind)  # type: ignore[arg-type]
        if not fits:
            wanted = "a function or class" if kind == "callable" else f"a {kind.__module__}.{kind.__qualname__}"  # type: ignore[union-attr]
            raise TypeError(f"{name!r} registers {entry!r}, which is not {wanted}")

    return check


REGISTRIES: list[Registry[Any]] = []  # every registry, in the order their modules were imported


def plugin_modules() -> list[str]:
    """The modules outside relayrl that registered entries in this process, in order."""
    origins = (registry.origin(name) for registry in REGISTRIES for name in registry)
    return list(dict.fromkeys(origin for origin in origins if origin != "relayrl" and not origin.startswith("relayrl.")))


def script_entries() -> list[str]:
    """The entries a script registered in its own body (``kind 'name'``), which no other
    process can import."""
    return [f"{registry.kind} {name!r}" for registry in REGISTRIES for name in registry if registry.origin(name) == "__main__"]


def import_plugins(modules: Sequence[str], paths: Sequence[str] = ()) -> None:
    """Imports ``modules`` (which register entries as they are imported), after appending
    the ``paths`` this process lacks to ``sys.path`` (another process's, where they are). A
    module whose import fails leaves nothing registered, so that once fixed it imports again."""
    sys.path.extend(path for path in paths if path not in sys.path)
    for module in modules:
        try:
            importlib.import_module(module)
        except BaseException:
            for registry in REGISTRIES:
                for name in [n for n in registry if registry.origin(n) == module]:
                    registry.remove(name)
            sys.modules.pop(module, None)
            raise


@dataclass(frozen=True)
class Plugins:
    """What another process of a run (a Ray actor) imports before it builds anything, so
    that it knows the names registered here: the modules outside relayrl that registered
    entries, this process's ``sys.path``, and those entries (``kind``, name, module)."""

    modules: tuple[str, ...]
    paths: tuple[str, ...]
    entries: tuple[tuple[str, str, str], ...]

    @classmethod
    def here(cls) -> "Plugins":
        """This process's, refusing entries a script registered in its own body, which no
        other process can import."""
        scripted = script_entries()
        if scripted:
            raise ConfigError(
                f"{', '.join(scripted)} {'was' if len(scripted) == 1 else 'were'} registered in the script itself (__main__), which Ray's "
                "actors cannot import: move the registrations into a module of their own and import it (or name it in the config's "
                "plugins), or run with backend.kind=local"
            )
        entries = tuple(
            (registry.kind, name, registry.origin(name)) for registry in REGISTRIES for name in registry if registry.origin(name) in plugin_modules()
        )
        return cls(tuple(plugin_modules()), tuple(sys.path), entries)

    def load(self) -> str | None:
        """Imports the modules here; None, or why this process still lacks the driver's
        entries (a module that does not import here, or an entry that a function of the
        module registered when called, not its import). An actor says it from ``ready``."""
        try:
            import_plugins(self.modules, self.paths)
        except Exception as error:  # the driver imported it: what differs here is said, not raised in Ray's words
            return f"a Ray actor could not import the modules that registered entries in the driver ({type(error).__name__}: {error})"
        kinds = {registry.kind: registry for registry in REGISTRIES}
        missing = [f"{kind} {name!r} ({module})" for kind, name, module in self.entries if kind in kinds and name not in kinds[kind]]
        if missing:
            return (f"importing {', '.join(dict.fromkeys(m for *_, m in self.entries))} in a Ray actor did not register {', '.join(missing)}: "
                    "register entries when their module is imported (at its top level), so that every process of the run has them")
        return None


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
