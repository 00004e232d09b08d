"""Frames of a game: what ``relayrl eval --record`` draws and saves. A vector env that can
draw has ``render(game) -> [H, W, 3] uint8`` (game ``game`` of its copies as it stands);
relayrl's array games draw themselves here without a window, envs behind the PettingZoo
adapter draw through their own ``render()`` (made with ``render_mode="rgb_array"``)."""

from pathlib import Path
from typing import Any

import numpy as np

from relayrl.core.errors import ConfigError, EnvError
from relayrl.envs.types import GroupObs, GroupStep

# the colour of each group's entities in the order of the env's groups, then of landmarks
GROUP_COLOURS = np.array([[64, 115, 191], [204, 77, 64], [77, 166, 89], [217, 166, 38], [140, 89, 166], [64, 166, 166]], np.uint8)
BACKGROUND = np.array([250, 250, 250], np.uint8)
LANDMARK = np.array([60, 60, 60], np.uint8)
OBSTACLE = np.array([110, 110, 110], np.uint8)

# what ``--record`` can draw, for the message where an env cannot
DRAWN = ("cooperative-navigation, simple-spread, simple-tag, simple-reference, pursuit, predator-prey, atari, battle, adversarial-pursuit, "
         "pursuit-pz, gym-multiagent (LBF, RWARE), gym (Gymnasium envs that render rgb_array frames: MuJoCo through EGL, Box2D, classic control), "
         "and PettingZoo envs by module path that render rgb_array frames (mpe2, pettingzoo.sisl)")


def disks(centres: np.ndarray, radii: np.ndarray, colours: np.ndarray, size: int = 400, extent: float | None = None) -> np.ndarray:
    """Filled disks on a square view of the plane, later ones over earlier ones: ``centres
    [K, 2]`` (x right, y up), ``radii [K]``, ``colours [K, 3]``. The view spans
    ``[-extent, extent]^2``; by default the farthest body's reach, at least 1 (MPE's camera)."""
    if extent is None:
        extent = max(1.0, float(np.max(np.abs(centres) + radii[:, None]))) if len(centres) else 1.0
    image = np.broadcast_to(BACKGROUND, (size, size, 3)).copy()
    scale = size / (2 * extent)
    pixel = (np.arange(size) + 0.5) / scale - extent  # pixel centres in world units
    for (x, y), r, colour in zip(centres, radii, colours):
        r_px = max(float(r), 1.5 / scale)  # at least a few pixels across
        cols = np.flatnonzero(np.abs(pixel - x) <= r_px)
        rows = np.flatnonzero(np.abs(-pixel - y) <= r_px)  # row 0 is the top: y = +extent
        if len(cols) == 0 or len(rows) == 0:
            continue
        inside = (pixel[cols][None, :] - x) ** 2 + (-pixel[rows][:, None] - y) ** 2 <= r_px**2
        block = image[rows[0]: rows[-1] + 1, cols[0]: cols[-1] + 1]
        block[inside] = colour
    return image


def grid_image(colours: np.ndarray, cell: int = 24) -> np.ndarray:
    """A grid of coloured cells ``[X, Y, 3]`` (x right, y down, as the grid games index
    them) as an image of ``cell`` pixels a side, with a thin line between cells."""
    image = np.repeat(np.repeat(colours.transpose(1, 0, 2), cell, axis=0), cell, axis=1)
    image[::cell, :] = image[::cell, :] // 10 * 9
    image[:, ::cell] = image[:, ::cell] // 10 * 9
    return image


def checked_frame(frame: Any, who: str) -> np.ndarray:
    """An env's frame as ``[H, W, 3] uint8``, or an error naming what it gave."""
    if frame is None:
        raise EnvError(f"{who}.render() returned None: the env was not made with render_mode='rgb_array', or draws to a window only")
    array = np.asarray(frame)
    if array.ndim != 3 or array.shape[2] not in (3, 4) or array.dtype != np.uint8:
        raise EnvError(f"{who}.render() returned {array.dtype} {array.shape}, not an RGB image [H, W, 3] of uint8")
    return array[:, :, :3]


class Filmed:
    """A vector env whose game ``game`` is drawn after its reset and after every step, until
    that game's first episode ends: the frames are the states its policies acted on, from
    the first observation to the last decision (the copy restarts as its episode ends, so
    the state after the last step is not drawn). Where each entity runs its own episodes
    (``independent_episodes``: Gymnasium copies), until every one of the game's has ended
    once. Everything else is the env's."""

    def __init__(self, venv: Any, game: int = 0) -> None:
        if not callable(getattr(venv, "render", None)):
            raise ConfigError(f"{type(venv).__name__} cannot draw its games; relayrl eval --record draws {DRAWN}")
        self.venv = venv
        self.game = game
        self.frames: list[np.ndarray] = []
        self.filming = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.venv, name)

    def reset(self, seed: int) -> list[GroupObs]:
        observed = self.venv.reset(seed)
        self.frames = [self.venv.render(self.game)]
        self.filming = True
        self.ended = [np.zeros(group.obs.shape[1], bool) for group in observed]
        return observed

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        steps, over = self.venv.step(actions)
        if self.filming:
            for ended, step in zip(self.ended, steps):
                ended |= step.terminated[self.game] | step.truncated[self.game]
            if over[self.game] or (getattr(self.venv, "independent_episodes", False) and all(e.all() for e in self.ended)):
                self.filming = False
            else:
                self.frames.append(self.venv.render(self.game))
        return steps, over


# animated formats by suffix: Pillow's format name and what it saves with
ANIMATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    ".gif": ("GIF", {}),  # 256 colours a frame, played everywhere; the smallest for flat drawings
    ".webp": ("WEBP", {"lossless": True, "method": 0}),  # every pixel as drawn; smaller than GIF for rendered scenes (MuJoCo)
}


def animation_path(path: str | Path) -> Path:
    """``path`` where it names an animation relayrl writes (``ANIMATIONS``); else an error
    saying so (checked before any game is played)."""
    path = Path(path)
    if path.suffix.lower() not in ANIMATIONS:
        raise ConfigError(f"frames are written as an animated image: give a path ending in {' or '.join(ANIMATIONS)}, not {path.name}")
    return path


def write_animation(frames: list[np.ndarray], path: str | Path, fps: float = 20.0) -> Path:
    """The frames as an animated image of the path's format (each shown ``1 / fps`` seconds, looping)."""
    from PIL import Image

    path = animation_path(path)
    kind, options = ANIMATIONS[path.suffix.lower()]
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(frame) for frame in frames]
    images[0].save(path, format=kind, save_all=True, append_images=images[1:], duration=max(20, round(1000 / fps)), loop=0, **options)
    return path
