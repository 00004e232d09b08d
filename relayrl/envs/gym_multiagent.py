"""Gymnasium multi-agent envs with Tuple spaces as PettingZoo Parallel envs.

Level-Based Foraging (``lbforaging``: ``Foraging-8x8-2p-2f-v3``) and the multi-robot
warehouse (``rware``: ``rware-tiny-2ag-v2``) are Gymnasium envs whose observation and
action spaces are Tuples with one entry per agent, whose rewards are a list and whose
``terminated`` flag is their one ``done`` (their step limit included). ``GymMultiAgentEnv``
makes one by its id and hands it on as agents ``agent_0 .. agent_{N-1}`` (one group):

- observations are float32 Boxes: 3-D ones channels-last (LBF's grid and RWARE's image
  observations are channels-first; relayrl's networks take H x W x C), Dict ones flattened;
- LBF's valid actions become each agent's ``action_mask`` (PettingZoo's
  ``Dict(observation, action_mask)``);
- an episode cut by a step limit is truncated, not terminated: LBF terminates only when
  all food is collected; RWARE never terminates (its step and inactivity limits truncate);
- ``state()`` is the agents' observations concatenated (neither env has a global state
  vector);
- made with ``render_mode="rgb_array"`` (``relayrl eval --record``), LBF and RWARE are
  drawn here from their state (their own renderers open a window); another env by
  ``module:EnvId`` is made with that render_mode and draws itself.

Its config section, ``gym-multiagent``, is here too: ``settings.env_id`` and the env
constructor's ``kwargs``.
"""

import dataclasses
import functools
import importlib
import json
from collections.abc import Callable
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv
from pydantic import Field, model_validator

from relayrl.core.specs import PIXEL_RANGE, pixels_of
from relayrl.core.strict import Strict
from relayrl.envs.flat_spaces import flat_box, flatten_obs
from relayrl.envs.frames import BACKGROUND, GROUP_COLOURS, LANDMARK, OBSTACLE, grid_image
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection

# id prefix -> (module that registers the ids, relayrl extra that installs it, an example id)
PACKAGES: dict[str, tuple[str, str, str]] = {
    "Foraging": ("lbforaging", "lbf", "Foraging-8x8-2p-2f-v3"),
    "rware": ("rware", "rware", "rware-tiny-2ag-v2"),
}

# rware's enum-valued constructor arguments, which a config gives by name
RWARE_ENUMS: dict[str, str] = {
    "reward_type": "RewardType",
    "observation_type": "ObservationType",
    "image_observation_layers": "ImageLayer",
}


def _package_of(env_id: str) -> tuple[str, str, str] | None:
    return next((package for prefix, package in PACKAGES.items() if env_id.startswith(prefix)), None)


def _import(module: str, env_id: str, extra: str | None) -> None:
    try:
        importlib.import_module(module)
    except ImportError as error:
        fix = f"pip install -c constraints.txt -e '.[{extra}]'" if extra else f"install the package that provides {module}"
        raise ValueError(f"{env_id} needs {module}, which cannot be imported ({error}): {fix}") from None


def env_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_id`` (``Foraging-...``, ``rware-...`` or ``module:EnvId``),
    importing the package that registers it; ValueError with the fix where it is missing."""
    module, _, name = env_id.rpartition(":")
    package = _package_of(name)
    if module:
        _import(module, env_id, None)
    elif package is not None:
        _import(package[0], env_id, package[1])
    if name not in gym.registry:
        hint = (
            f" (e.g. {package[2]}; other variants by settings.kwargs)" if package
            else " (e.g. HalfCheetah-v5, LunarLanderContinuous-v3; an id that your own module registers is named with the module, "
            "my_module:MyEnv-v0, as gymnasium.make takes it, so that every process imports the module)"
        )
        raise ValueError(f"{env_id!r} is not a registered Gymnasium env{hint}")
    return gym.registry[name]


def _member(enum: Any, key: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if value.upper() not in enum.__members__:
        raise ValueError(f"kwargs.{key}={value!r} is not one of {[m.lower() for m in enum.__members__]}")
    return enum[value.upper()]


def _constructor_kwargs(spec: gym.envs.registration.EnvSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    """RWARE's enum arguments from their names (``reward_type: global``); the rest as given."""
    if not str(spec.entry_point).startswith("rware"):
        return dict(kwargs)
    warehouse = importlib.import_module("rware.warehouse")
    converted = dict(kwargs)
    for key, enum_name in RWARE_ENUMS.items():
        if key in kwargs:
            enum, value = getattr(warehouse, enum_name), kwargs[key]
            converted[key] = [_member(enum, key, v) for v in value] if isinstance(value, list) else _member(enum, key, value)
    return converted


def make_gym_env(env_id: str, kwargs: dict[str, Any] | None = None, render_mode: str | None = None) -> gym.Env:
    """``env_id`` made with ``kwargs`` over its registered constructor arguments. Through the
    spec rather than ``gym.make(env_id, **kwargs)``, where ``max_episode_steps`` would set a
    TimeLimit wrapper instead of LBF's own limit. The passive checker is off: it expects one
    agent's float reward."""
    spec = env_spec(env_id)
    merged = {**spec.kwargs, **_constructor_kwargs(spec, kwargs or {})}
    return gym.make(dataclasses.replace(spec, kwargs=merged), disable_env_checker=True, **({"render_mode": render_mode} if render_mode else {}))


@functools.cache
def _made_spaces(env_id: str, kwargs: str) -> tuple[spaces.Space, spaces.Space]:
    env = make_gym_env(env_id, json.loads(kwargs))
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _spaces_of(env_id: str, kwargs: dict[str, Any]) -> tuple[spaces.Space, spaces.Space]:
    return _made_spaces(env_id, json.dumps(kwargs, sort_keys=True))


def multiagent_env_id(name: str) -> bool:
    """Whether ``name`` is a Gymnasium id of a multi-agent env with Tuple spaces: an LBF
    (``Foraging...``) or RWARE (``rware...``) id, or ``module:EnvId`` whose env has Tuple
    observation and action spaces (made once to see). ValueError, with the fix, where such
    a name's package is missing or it names no registered env."""
    if not isinstance(name, str):
        return False
    if ":" not in name and _package_of(name) is None:
        return False
    env_spec(name)
    if ":" not in name:
        return True
    observation_space, action_space = _spaces_of(name, {})
    return isinstance(observation_space, spaces.Tuple) and isinstance(action_space, spaces.Tuple)


def _float_box(low: np.ndarray, high: np.ndarray) -> spaces.Box:
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def _converter(space: spaces.Space) -> tuple[spaces.Box, Any]:
    """The float32 Box an agent's observations are handed on in, and the conversion to it;
    8-bit intensities stay uint8 (``pixels_of``: the networks read them divided by 255)."""
    if isinstance(space, spaces.Box) and len(space.shape) == 3:
        dtype = np.uint8 if pixels_of(space) else np.float32
        low, high = np.moveaxis(space.low, 0, -1), np.moveaxis(space.high, 0, -1)
        box = spaces.Box(low.astype(dtype), high.astype(dtype), dtype=dtype)
        return box, lambda o: np.moveaxis(np.asarray(o, dtype), 0, -1)
    if isinstance(space, spaces.Box) and pixels_of(space):
        return space, lambda o: np.asarray(o, np.uint8)
    if isinstance(space, spaces.Box):
        return _float_box(space.low, space.high), lambda o: np.asarray(o, np.float32)
    return flat_box(space), lambda o: flatten_obs(space, o)


def _mixed(colour: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``colour`` faded toward the background: full at weight 1 ``[..., 3]``."""
    return (BACKGROUND + np.asarray(weight, np.float32)[..., None] * (colour.astype(np.float32) - BACKGROUND)).astype(np.uint8)


def draw_foraging(game: Any) -> np.ndarray:
    """An LBF field: food green and each player in the team's colour, both the stronger the
    higher their level (as a share of the highest on the field)."""
    food = game.field.T  # [row, col] -> x right, y down
    top = max(int(food.max()), *(int(p.level) for p in game.players), 1)
    colours = np.broadcast_to(BACKGROUND, (*food.shape, 3)).copy()
    colours[food > 0] = _mixed(GROUP_COLOURS[2], 0.35 + 0.65 * food[food > 0] / top)
    for player in game.players:
        row, col = player.position
        colours[col, row] = _mixed(GROUP_COLOURS[0], 0.35 + 0.65 * int(player.level) / top)
    return grid_image(colours)


def draw_warehouse(game: Any) -> np.ndarray:
    """An RWARE floor: goals dark, shelves grey (the requested ones amber), robots in the
    team's colour (darker while carrying a shelf)."""
    rows, cols = game.grid_size
    colours = np.broadcast_to(BACKGROUND, (cols, rows, 3)).copy()
    for x, y in game.goals:
        colours[x, y] = LANDMARK
    requested = {id(shelf) for shelf in game.request_queue}
    for shelf in game.shelfs:
        colours[shelf.x, shelf.y] = GROUP_COLOURS[3] if id(shelf) in requested else OBSTACLE
    for robot in game.agents:
        colours[robot.x, robot.y] = GROUP_COLOURS[0] // 2 if robot.carrying_shelf is not None else GROUP_COLOURS[0]
    return grid_image(colours)


# id prefix (``PACKAGES``) -> what draws that family's games from its state
DRAWINGS: dict[str, Callable[[Any], np.ndarray]] = {"Foraging": draw_foraging, "rware": draw_warehouse}


def _is_lbf(game: gym.Env) -> bool:
    return type(game).__module__.startswith("lbforaging.")


def _is_rware(game: gym.Env) -> bool:
    return type(game).__module__.startswith("rware.")


class GymMultiAgentEnv(ParallelEnv):
    """One Gymnasium env with Tuple spaces (``make_gym_env(env_id, kwargs)``) as a PettingZoo
    Parallel env of agents ``agent_0 .. agent_{N-1}``, all present until the episode ends."""

    def __init__(self, env_id: str, kwargs: dict[str, Any] | None = None, render_mode: str | None = None) -> None:
        self.drawing = next((draw for prefix, draw in DRAWINGS.items() if env_id.startswith(prefix)), None) if render_mode == "rgb_array" else None
        self.env = make_gym_env(env_id, kwargs, None if self.drawing else render_mode)
        self.env_id = env_id
        observation_space, action_space = self.env.observation_space, self.env.action_space
        if not (isinstance(observation_space, spaces.Tuple) and isinstance(action_space, spaces.Tuple)):
            raise TypeError(f"{env_id} has {observation_space} observations and {action_space} actions: multi-agent envs have Tuples of them")
        if len(observation_space) != len(action_space):
            raise TypeError(f"{env_id} has {len(observation_space)} observation spaces but {len(action_space)} action spaces")
        game = self.env.unwrapped
        self.possible_agents = [f"agent_{i}" for i in range(len(action_space))]
        self.agents: list[str] = []
        self.metadata = {"name": env_id, "render_modes": list(game.metadata.get("render_modes", [])), "is_parallelizable": True}
        self.render_mode = render_mode if self.drawing else getattr(game, "render_mode", None)
        self._converters = []
        self._observation_spaces: dict[str, spaces.Space] = {}
        self._action_spaces = dict(zip(self.possible_agents, action_space))
        # LBF forbids moves into walls, food or off the field, and loading with no food beside
        self._masked = _is_lbf(game) and all(isinstance(s, spaces.Discrete) for s in action_space)
        boxes = []
        for agent, space in zip(self.possible_agents, observation_space):
            box, convert = _converter(space)
            self._converters.append(convert)
            boxes.append(box)
            if self._masked:
                n = int(self._action_spaces[agent].n)
                mask = spaces.Box(0, 1, (n,), np.int8)
                self._observation_spaces[agent] = spaces.Dict({"observation": box, "action_mask": mask})
            else:
                self._observation_spaces[agent] = box
        # the state: every agent's observation side by side, as float32 (8-bit intensities divided by 255)
        self._state_divisor = np.concatenate([np.full(int(np.prod(b.shape)), PIXEL_RANGE if pixels_of(b) else 1, np.float32) for b in boxes])
        self.state_space = _float_box(
            np.concatenate([b.low.reshape(-1) for b in boxes]) / self._state_divisor,
            np.concatenate([b.high.reshape(-1) for b in boxes]) / self._state_divisor,
        )
        self._last: list[np.ndarray] = [np.zeros(b.shape, b.dtype) for b in boxes]

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    def _action_masks(self) -> list[np.ndarray]:
        """Each LBF agent's valid actions now (the env's ``_valid_actions``, which it computes
        after every reset and step and which its step enforces by turning others into NONE)."""
        game = self.env.unwrapped
        masks = []
        for agent, player in zip(self.possible_agents, game.players):
            mask = np.zeros(self._action_spaces[agent].n, np.int8)
            mask[[action.value for action in game._valid_actions[player]]] = 1
            masks.append(mask)
        return masks

    def _observed(self, raw: tuple) -> dict[str, Any]:
        self._last = [convert(o) for convert, o in zip(self._converters, raw)]
        if not self._masked:
            return dict(zip(self.possible_agents, self._last))
        return {
            agent: {"observation": obs, "action_mask": mask}
            for agent, obs, mask in zip(self.possible_agents, self._last, self._action_masks())
        }

    def _ending(self, done: bool, truncated: bool) -> tuple[bool, bool]:
        """(terminated, truncated) of the episode from the env's ``done`` and ``truncated``."""
        game = self.env.unwrapped
        if _is_lbf(game):
            # LBF's done also fires at its step limit; only an emptied field is a real end
            terminated = bool(done) and int(game.field.sum()) == 0
            return terminated, bool(done or truncated) and not terminated
        if _is_rware(game):
            # the warehouse runs on forever: its step and inactivity limits only cut episodes
            return False, bool(done or truncated)
        return bool(done), bool(truncated)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], dict[str, dict]]:
        raw, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            for i, space in enumerate(self._action_spaces.values()):
                space.seed(seed + i)
        self.agents = list(self.possible_agents)
        return self._observed(raw), {agent: dict(info) for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        joint = tuple(
            int(actions[agent]) if isinstance(space, spaces.Discrete) else np.asarray(actions[agent])
            for agent, space in self._action_spaces.items()
        )
        raw, rewards, done, truncated, info = self.env.step(joint)
        terminated, truncated = self._ending(done, truncated)
        agents = self.agents
        obs = self._observed(raw)
        if terminated or truncated:
            self.agents = []
        return (
            obs,
            {agent: float(r) for agent, r in zip(agents, rewards)},
            dict.fromkeys(agents, terminated),
            dict.fromkeys(agents, truncated),
            {agent: dict(info) for agent in agents},
        )

    def state(self) -> np.ndarray:
        return np.concatenate([o.reshape(-1) for o in self._last]).astype(np.float32) / self._state_divisor

    def render(self) -> Any:
        return self.drawing(self.env.unwrapped) if self.drawing else self.env.render()

    def close(self) -> None:
        self.env.close()


class GymMultiAgentSettings(Strict):
    """A Gymnasium multi-agent env by its id, and its constructor's keyword arguments over
    the registered ones (LBF: ``max_episode_steps``, ``grid_observation``, ``sight``; RWARE:
    ``max_steps``, ``reward_type: global``, ``observation_type: image``)."""

    env_id: str = "Foraging-8x8-2p-2f-v3"
    kwargs: dict[str, Any] = Field(default_factory=dict, description="the env constructor's arguments over the registered ones")

    @model_validator(mode="after")
    def _multiagent(self) -> "GymMultiAgentSettings":
        if not multiagent_env_id(self.env_id):
            raise ValueError(f"{self.env_id} is not a multi-agent env with Tuple spaces: use its id with env.name (a gym env)")
        try:  # the env made once (cached), so wrong kwargs fail with the config
            _spaces_of(self.env_id, self.kwargs)
        except (TypeError, ValueError, KeyError, AssertionError) as error:
            raise ValueError(f"{self.env_id} refuses kwargs {self.kwargs}: {type(error).__name__}: {error}") from None
        return self


class GymMultiAgentSection(EnvSection):
    """A Gymnasium multi-agent env (LBF, RWARE); its one team is ``agent``."""

    name: Literal["gym-multiagent"] = "gym-multiagent"
    actions = "discrete"  # LBF's and RWARE's; action_kind() reads the configured env's
    # a factory: the default task is checked (it needs the lbf extra) only when this env is configured
    settings: GymMultiAgentSettings = Field(default_factory=GymMultiAgentSettings)

    def group_names(self) -> list[str]:
        return ["agent"]

    def action_kind(self) -> str:
        """Discrete or continuous, as the env's first agent's actions are."""
        _, action_space = _spaces_of(self.settings.env_id, self.settings.kwargs)
        return "continuous" if isinstance(action_space[0], spaces.Box) else "discrete"


ENVS.add("gym-multiagent", EnvEntry(lambda settings: EnvFactory(GymMultiAgentEnv, dict(settings)), GymMultiAgentSection))
