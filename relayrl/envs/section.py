"""The config section of an environment (``env:``): what every one has. A built-in env's
section class lives beside the env and joins through ``relayrl.envs.registry.ENVS``."""

import importlib.util
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from relayrl.core.strict import Strict


class EnvSection(Strict):
    """What every environment section has: E copies stepped together, in this process or
    in worker processes (envs without a batched implementation)."""

    num_envs: int = Field(1, ge=1, description="env copies stepped together (E)")
    actions: ClassVar[str] = "discrete"  # the action spaces its groups have: discrete, continuous or any
    vector: Literal["sync", "subproc"] = Field("sync", description="copies in this process or in workers")
    # env name -> (module it imports, the relayrl extra that installs it)
    needs: ClassVar[dict[str, tuple[str, str]]] = {}

    def group_names(self) -> list[str] | None:
        """The env's groups where the section knows them without building the env; None:
        known once it is built (a PettingZoo env by module path, a user's)."""
        return None

    def action_kind(self) -> str:
        """The action spaces its groups have: discrete, continuous or any (known once built)."""
        return self.actions

    def env_settings(self) -> dict[str, Any]:
        """The keyword arguments the env is built with."""
        settings = getattr(self, "settings")
        return settings if isinstance(settings, dict) else settings.model_dump()

    @model_validator(mode="after")
    def _installed(self) -> "EnvSection":
        name = getattr(self, "name", "")
        if name in self.needs:
            module, extra = self.needs[name]
            if importlib.util.find_spec(module) is None:
                raise ValueError(f"{name} needs {module}, which is not installed: pip install -c constraints.txt -e '.[{extra}]'")
        return self
