"""Environments by name: each built-in one's factory and config section, and any installed
PettingZoo Parallel env by its module path. A factory is picklable so subprocess workers
can use it."""

import dataclasses
import difflib
import functools
import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args, get_origin

from pettingzoo.utils.env import ParallelEnv
from pydantic import Field, model_validator

from relayrl.core.errors import ConfigError
from relayrl.core.registry import Registry
from relayrl.envs.frames import DRAWN
from relayrl.envs.pettingzoo_adapter import AEC_HINT, ParallelEnvAdapter
from relayrl.envs.section import EnvSection


@dataclass(frozen=True)
class EnvFactory:
    """Makes one PettingZoo ParallelEnv. ``maker`` must be picklable (a module-level
    function or a functools.partial of one) for the subprocess vector env."""

    maker: Callable[..., ParallelEnv] | None
    settings: dict[str, Any] = field(default_factory=dict)
    obs_dtypes: dict[str, str] = field(default_factory=dict)
    # A batched implementation ``(num_envs, **settings) -> VectorEnv`` with the same
    # dynamics; where set, vector envs use it instead of E copies of ``maker``. One whose
    # envs must be made to draw (``render_mode``) takes ``render_mode`` too; the others draw
    # themselves from their arrays.
    vectorised: Callable[..., Any] | None = None
    # whether the adapter hands up the env's ``state()``: only where a learner reads it (an
    # env's state() may be costly, or fail where its observations do not, as multiwalker's)
    with_state: bool = True
    # env.groups: group name -> the agents it puts there (instead of grouping by name prefix)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # PettingZoo's render_mode for the envs made (``"rgb_array"`` where frames are recorded)
    render_mode: str | None = None

    def make(self) -> ParallelEnv:
        if self.maker is None:
            raise ValueError("this environment exists only in its batched form (make_vector_env)")
        if self.render_mode is None:
            return self.maker(**self.settings)
        try:
            return self.maker(**self.settings, render_mode=self.render_mode)
        except TypeError as error:
            if "render_mode" not in str(error):
                raise
            maker = getattr(self.maker, "__qualname__", None) or repr(self.maker)
            raise ConfigError(f"{maker} takes no render_mode ({error}), so relayrl cannot draw its games (relayrl eval --record "
                              f"draws {DRAWN}); for an env of your own, give it a render_mode keyword and return rgb_array "
                              "frames from render(), as PettingZoo's envs do") from None

    def adapter(self) -> ParallelEnvAdapter:
        return ParallelEnvAdapter(self.make(), self.obs_dtypes, self.with_state, self.groups)


@dataclass(frozen=True)
class EnvEntry:
    """A built-in environment: ``factory(settings)`` makes it from its section's settings;
    ``section`` is its config section class (``env:``), which may serve several names (the
    same dynamics implemented twice)."""

    factory: Callable[[dict[str, Any]], EnvFactory]
    section: type[EnvSection]


def check_env_entry(name: str, entry: Any) -> None:
    """An env entry is an ``EnvEntry`` whose section is an ``EnvSection`` with a ``name``
    field that takes the registered name (what ``env.name`` picks the section by)."""
    if not isinstance(entry, EnvEntry):
        raise TypeError(f"env {name!r} registers {entry!r}, which is not a relayrl.envs.registry.EnvEntry(factory, section)")
    section = entry.section
    if not (isinstance(section, type) and issubclass(section, EnvSection)):
        raise TypeError(f"env {name!r}'s section {section!r} is not a subclass of relayrl.envs.section.EnvSection")
    if not callable(entry.factory):
        raise TypeError(f"env {name!r}'s factory {entry.factory!r} is not callable: factory(settings) returns an EnvFactory")
    field = section.model_fields.get("name")
    if field is None:
        raise TypeError(f"env {name!r}'s section {section.__name__} has no name field: declare name: Literal[{name!r}] = {name!r}")
    allowed = get_args(field.annotation) if get_origin(field.annotation) is Literal else None
    if allowed is not None and name not in allowed:
        raise TypeError(f"env {name!r}'s section {section.__name__} takes name {' or '.join(map(repr, allowed))}, not the name it is registered "
                        f"under: register it as {allowed[0]!r}, or add {name!r} to its name Literal")


# Built-in environments by ``env.name``: each env's module registers its own (imported by
# ``relayrl.envs``) and imports what it needs only when its factory is called, so the
# optional extras stay optional.
ENVS: Registry[EnvEntry] = Registry("environment", check_env_entry)


def parallel_env(module: str, **kwargs: Any) -> ParallelEnv:
    """``module.parallel_env(**kwargs)``: a PettingZoo Parallel env named by its module path."""
    return importlib.import_module(module).parallel_env(**kwargs)


def check_parallel_env(module: str) -> None:
    """Fails with the fix when ``module`` is not an installed PettingZoo Parallel env."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        raise ValueError(f"{module} cannot be imported ({error}): {_import_fix(module, error)}") from None
    if not callable(getattr(imported, "parallel_env", None)):
        turns = callable(getattr(imported, "env", None)) or callable(getattr(imported, "raw_env", None))
        raise ValueError(
            f"{module} has no parallel_env(): name a PettingZoo Parallel env module, e.g. pettingzoo.sisl.multiwalker_v9"
            + (f". {module} has env() only: {AEC_HINT}" if turns else "")
        )


def _import_fix(module: str, error: ImportError) -> str:
    """What to do about a module that did not import: where its package is installed but
    has no such module (an env's version suffix moved on: ``pursuit_v4`` -> ``pursuit_v5``),
    the package's modules of that name; else to install the package."""
    package, _, leaf = module.rpartition(".")
    if not package or getattr(error, "name", None) != module:
        return "install the package that provides it"
    try:
        path = importlib.import_module(package).__path__
    except (ImportError, AttributeError):
        return "install the package that provides it"
    stem = leaf.rsplit("_v", 1)[0]
    present = sorted(info.name for info in pkgutil.iter_modules(path) if not info.name.startswith("_"))
    versioned = [name for name in present if re.search(r"_v\d+$", name)]  # PettingZoo's env modules
    present = versioned or present
    versions = [f"{package}.{name}" for name in present if name.rsplit("_v", 1)[0] == stem]
    if versions:
        return f"the installed {package} has {' and '.join(versions)} (an env's version suffix changes between releases)"
    close = difflib.get_close_matches(leaf, present, n=3)
    if close:
        return f"did you mean {' or '.join(f'{package}.{name}' for name in close)}?"
    return f"{package} has no module {leaf}; its modules: {', '.join(present)}"


GROUPS_HELP = "group name -> the agents it holds (equal spaces), for agents whose names do not group them (alice, bob); the others group by name prefix"
MODULE_PATH = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"  # a module of the working directory (my_env) or a package's (mpe2.simple_spread_v3)


class PettingZooSection(EnvSection):
    """Any importable PettingZoo Parallel env by its module path (``pettingzoo.sisl.multiwalker_v9``,
    ``mpe2.simple_spread_v3``, or ``my_env`` for a ``my_env.py`` with a ``parallel_env()`` in
    the working directory): ``settings`` are the keyword arguments of its
    ``parallel_env``. Its groups are its agents with one name prefix and equal spaces,
    known once it is built."""

    name: str = Field(pattern=MODULE_PATH)
    settings: dict[str, Any] = Field(default_factory=dict, description="passed to the module's parallel_env")
    groups: dict[str, list[str]] = Field(default_factory=dict, description=GROUPS_HELP)
    actions: ClassVar[str] = "any"

    @model_validator(mode="after")
    def _importable(self) -> "PettingZooSection":
        check_parallel_env(self.name)
        return self

    def group_names(self) -> None:
        return None


def make_env_factory(name: str, settings: dict[str, Any], with_state: bool = True) -> EnvFactory:
    """A built-in environment by name (``ENVS``), or any installed PettingZoo Parallel env
    by its module path with ``settings`` as its keyword arguments; ``with_state``: whether
    its global state is handed up (``EnvFactory.with_state``)."""
    if name in ENVS:
        return dataclasses.replace(ENVS[name].factory(settings), with_state=with_state)
    if re.match(MODULE_PATH, name):
        check_parallel_env(name)
        return EnvFactory(functools.partial(parallel_env, name), dict(settings), with_state=with_state)
    raise ValueError(f"unknown environment {name!r}; built-in: {', '.join(ENVS)}, or a PettingZoo module path")
