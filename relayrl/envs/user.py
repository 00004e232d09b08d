"""``env.name: user``: the environment a user's Python code builds and hands to
``train(config, env_factory=...)``. What the config alone cannot know of it (its groups,
its action spaces) is checked once it is built: a learner that cannot act on its actions
is refused then, before training."""

from typing import Any, ClassVar, Literal

from pydantic import Field

from relayrl.core.errors import ConfigError
from relayrl.envs.registry import ENVS, GROUPS_HELP, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection


class UserSection(EnvSection):
    name: Literal["user"] = "user"
    settings: dict[str, Any] = Field(default_factory=dict, description="unused: the env_factory carries its own settings")
    groups: dict[str, list[str]] = Field(default_factory=dict, description=GROUPS_HELP)
    actions: ClassVar[str] = "any"

    def group_names(self) -> None:
        return None


def _given_in_python(settings: dict[str, Any]) -> EnvFactory:
    raise ConfigError("env.name=user is the env that train(config, env_factory=...) is given in Python: pass env_factory there, "
                     "or name an environment (relayrl list)")


ENVS.add("user", EnvEntry(_given_in_python, UserSection))
