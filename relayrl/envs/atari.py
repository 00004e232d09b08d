"""Atari 2600 games through the Arcade Learning Environment (``ale-py``, which ships the
ROMs), one player ``player_0`` behind PettingZoo's Parallel API.

The preprocessing of Mnih et al. 2015 ("Human-level control through deep reinforcement
learning", methods), with the choices Machado et al. 2018 ("Revisiting the Arcade
Learning Environment") recommend: a random number (1 to ``noop_max``) of NOOP frames after
each reset; an action repeated for ``frame_skip`` frames, its rewards summed; the
grayscale screen, the pixel-wise max of the last two frames of the repeat, shrunk to
``screen_size`` x ``screen_size`` by area averaging; the last ``stack`` such screens as the
channels of a uint8 ``[H, W, stack]`` observation (at a reset, the first screen repeated).
An episode ends at the game's end (terminated) or after ``max_frames`` emulator frames
(truncated); losing a life does not end it. Rewards are the game's own score changes,
unclipped, so returns are game scores. ``repeat_action_probability`` is 0 by default
(deterministic emulation; Machado et al.'s sticky actions are 0.25).

A game's state (the emulator's, its RNG included, the frame stack and the NOOP RNG) is
data: ``state_dict`` / ``load_state_dict`` save an episode in flight, so a resumed run
continues it exactly. Its config section, ``atari``, is here too.
"""

from functools import cache
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv
from pydantic import Field, field_validator

from relayrl.core.strict import Strict
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection

AGENT = "player_0"


def _ale() -> Any:
    import ale_py  # the atari extra; imported where a game is made

    return ale_py


@cache
def area_weights(size_in: int, size_out: int) -> np.ndarray:
    """``[size_out, size_in]``: output pixel i averages the inputs its interval
    ``[i, i + 1) * size_in / size_out`` covers, each by the length it covers (area
    interpolation, as a matrix so that a screen shrinks by two small matmuls)."""
    scale = size_in / size_out
    edges = np.arange(size_out + 1) * scale
    left, right = edges[:-1, None], edges[1:, None]
    pixels = np.arange(size_in)[None, :]
    overlap = np.clip(np.minimum(right, pixels + 1) - np.maximum(left, pixels), 0.0, None)
    return (overlap / scale).astype(np.float32)


def installed_games() -> list[str]:
    """The ROMs ``ale-py`` ships, by the names ``settings.game`` takes."""
    return sorted(_ale().roms.get_all_rom_ids())


class AtariGame(ParallelEnv):
    """One Atari game with the preprocessing above; its player is ``player_0``."""

    metadata = {"name": "atari", "render_modes": ["rgb_array"], "is_parallelizable": True}

    def __init__(
        self,
        game: str = "pong",
        frame_skip: int = 4,
        noop_max: int = 30,
        screen_size: int = 84,
        stack: int = 4,
        repeat_action_probability: float = 0.0,
        max_frames: int = 108_000,
        full_action_space: bool = False,
        render_mode: str | None = None,
    ) -> None:
        ale_py = _ale()
        self.render_mode = render_mode
        self.frame_skip, self.noop_max, self.max_frames = frame_skip, noop_max, max_frames
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before the first game: its banner
        self.ale = ale_py.ALEInterface()
        self.ale.setFloat("repeat_action_probability", repeat_action_probability)
        self.ale.setInt("frame_skip", 1)  # the repeat is done here, to max-pool its last two frames
        self.rom = ale_py.roms.get_rom_path(game)
        self._load(0)
        self.actions = self.ale.getLegalActionSet() if full_action_space else self.ale.getMinimalActionSet()
        height, width = self.ale.getScreenDims()
        self.rows, self.columns = area_weights(height, screen_size), area_weights(width, screen_size).T.copy()
        self.rng = np.random.default_rng(0)
        self.frames = np.zeros((screen_size, screen_size, stack), np.uint8)
        self.possible_agents = [AGENT]
        self.agents: list[str] = []
        self._observation_space = spaces.Box(0, 255, self.frames.shape, np.uint8)
        self._action_space = spaces.Discrete(len(self.actions))

    def _load(self, seed: int) -> None:
        """The emulator seeded with ``seed`` (ALE reads its seed when a ROM loads)."""
        self.ale.setInt("random_seed", int(seed) % 2**31)
        self.ale.loadROM(self.rom)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def render(self) -> np.ndarray:
        """The emulator's screen in colour, as the game shows it (``[210, 160, 3]`` for most)."""
        return self.ale.getScreenRGB()

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def _push(self, screen: np.ndarray) -> None:
        """The shrunk screen as the newest channel of the stack."""
        small = self.rows @ screen.astype(np.float32) @ self.columns
        self.frames[..., :-1] = self.frames[..., 1:]
        self.frames[..., -1] = np.rint(small).astype(np.uint8)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
            self._load(int(self.rng.integers(2**31)))
        while True:
            self.ale.reset_game()
            for _ in range(int(self.rng.integers(1, self.noop_max + 1)) if self.noop_max else 0):
                self.ale.act(self.actions[0])  # NOOP: action 0 of both action sets
                if self.ale.game_over():
                    break
            if not self.ale.game_over():
                break
        self._push(self.ale.getScreenGrayscale())
        self.frames[..., :-1] = self.frames[..., -1:]
        self.agents = [AGENT]
        return {AGENT: self.frames.copy()}, {AGENT: {}}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        action = self.actions[int(actions[AGENT])]
        reward, last, before = 0.0, None, None
        for t in range(self.frame_skip):
            reward += self.ale.act(action)
            if t >= self.frame_skip - 2 or self.ale.game_over():
                before, last = last, self.ale.getScreenGrayscale()
            if self.ale.game_over():
                break
        assert last is not None
        self._push(last if before is None else np.maximum(before, last))
        terminated = bool(self.ale.game_over())
        truncated = not terminated and self.ale.getEpisodeFrameNumber() >= self.max_frames
        self.agents = [] if terminated or truncated else [AGENT]
        return {AGENT: self.frames.copy()}, {AGENT: reward}, {AGENT: terminated}, {AGENT: truncated}, {AGENT: {}}

    def state_dict(self) -> dict[str, Any]:
        """The episode in flight as data: the emulator's state (with its RNG) as bytes, the
        frame stack and the NOOP RNG."""
        emulator = self.ale.cloneState(include_rng=True).serialize()
        return {
            "emulator": np.frombuffer(emulator, np.uint8).copy(),
            "frames": self.frames.copy(),
            "rng": self.rng.bit_generator.state,
            "agents": list(self.agents),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ale.restoreState(_ale().ALEState(np.asarray(state["emulator"], np.uint8).tobytes()))
        self.frames = np.array(state["frames"], np.uint8)
        self.rng.bit_generator.state = state["rng"]
        self.agents = list(state["agents"])

    def close(self) -> None:
        return None


class AtariSettings(Strict):
    """An Atari game and its preprocessing (Mnih et al. 2015; Machado et al. 2018)."""

    game: str = Field("pong", description="an ale-py ROM id: pong, breakout, space_invaders, ...")
    frame_skip: int = Field(4, ge=1, description="frames each action is repeated (rewards summed)")
    noop_max: int = Field(30, ge=0, description="at most this many NOOP frames after a reset (drawn from 1)")
    screen_size: int = Field(84, ge=8, description="the square the grayscale screen is shrunk to")
    stack: int = Field(4, ge=1, description="the last screens an observation holds, as channels")
    repeat_action_probability: float = Field(0.0, ge=0.0, lt=1.0, description="sticky actions (Machado et al.: 0.25)")
    max_frames: int = Field(108_000, ge=1, description="emulator frames after which an episode is truncated (30 minutes)")
    full_action_space: bool = Field(False, description="all 18 actions instead of the game's minimal set")

    @field_validator("game")
    @classmethod
    def _known(cls, game: str) -> str:
        try:
            games = installed_games()
        except ImportError:  # the section's own check names the extra
            return game
        if game not in games:
            close = [g for g in games if g.startswith(game[:3])] or games[:8]
            raise ValueError(f"{game!r} is not a ROM that ale-py ships; e.g. {', '.join(close)}")
        return game


class AtariSection(EnvSection):
    """An Atari game with one player, group ``player``."""

    name: Literal["atari"] = "atari"
    needs = {"atari": ("ale_py", "atari")}
    settings: AtariSettings = Field(default_factory=AtariSettings)

    def group_names(self) -> list[str]:
        return ["player"]


ENVS.add("atari", EnvEntry(lambda settings: EnvFactory(AtariGame, dict(settings)), AtariSection))
