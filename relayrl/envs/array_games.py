"""What every env that steps E games as arrays shares: its episode bookkeeping and its state
as data (the games' arrays, the RNG and the episode accumulators), which a checkpoint keeps
so that a resumed run continues every game exactly."""

from dataclasses import asdict
from typing import Any

import numpy as np

from relayrl.envs.episodes import EpisodeStats, EpisodeTally


class ArrayGames:
    """Subclasses name their saved state's ``kind``, say in ``label`` what saved it (for the
    message when another env's state is loaded), and list their arrays."""

    kind: str
    label: str
    settings: dict[str, Any]
    num_envs: int
    rng: np.random.Generator
    tally: EpisodeTally

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        """Every array of the games in flight, in the order ``load_game_arrays`` takes."""
        raise NotImplementedError

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        raise NotImplementedError

    def check_state(self, state: dict[str, Any]) -> None:
        """A subclass refuses saved states it cannot continue (beyond kind and settings)."""

    def drain_episodes(self) -> EpisodeStats:
        return self.tally.drain()

    def cut_episodes(self) -> EpisodeStats:
        return self.tally.cut()

    def get_state(self) -> dict[str, Any]:
        arrays = (*self.game_arrays(), self.tally.returns, self.tally.lengths)
        return {
            "kind": self.kind,
            "settings": self.settings,
            "num_envs": self.num_envs,
            "rng": self.rng.bit_generator.state,
            "arrays": tuple(a.copy() for a in arrays),
            "episodes": asdict(self.tally.ended),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("kind") != self.kind:
            raise ValueError(f"this env state was not saved by {self.label}")
        self.check_state(state)
        if state["settings"] != self.settings or state["num_envs"] != self.num_envs:
            raise ValueError(f"this env state belongs to different {self.kind.removesuffix('-vector')} settings or a different num_envs")
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        *arrays, returns, lengths = (np.array(a) for a in state["arrays"])
        self.load_game_arrays(arrays)
        self.tally.load_state_dict({"returns": returns, "lengths": lengths, "episodes": state["episodes"]})

    def close(self) -> None:
        pass
