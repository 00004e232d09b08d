"""Built-in training schemes over rounds (paper 004, section 4.4): a small file each, joined
through ``SCHEMES`` under the config section that configures it. A scheme is built from its
section and a seed, has ``on_round_start`` / ``on_round_end(context)``, a table of ``rows``
(written to ``<run dir>/<name>.csv`` after every round) and a state in checkpoints."""

from typing import Any, Protocol

from relayrl.arena.round import RoundContext
from relayrl.arena.schemes.pbt import PopulationBasedTraining
from relayrl.arena.schemes.selfplay import SelfPlay
from relayrl.arena.schemes.tournament import Tournament
from relayrl.core.registry import Registry, of_type


class Scheme(Protocol):
    name: str
    rows: list[dict[str, Any]]

    def on_round_start(self, context: RoundContext) -> None: ...

    def on_round_end(self, context: RoundContext) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


SCHEMES: Registry[Any] = Registry("scheme", of_type(type))  # config section -> the scheme's class, built as cls(section, seed)
SCHEMES.add("pbt", PopulationBasedTraining)
SCHEMES.add("tournament", Tournament)
SCHEMES.add("selfplay", SelfPlay)
