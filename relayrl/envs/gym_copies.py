"""K copies of one single-agent Gymnasium environment as one K-agent environment.

DASE (paper 001, section 3; SPEC §1.2): agent k acts only in copy k, seeded seed + k, and
the agents share nothing but a replay. Each copy runs its own episodes: when copy k's
episode ends it is reset on its own (its ``next_obs`` keeps the final observation for
bootstrapping), and the finished episode is recorded for agent k. The copies form one
agent group ``[E, K, ...]`` (E = 1 for training; E > 1 steps evaluation episodes as a
batch), so the learners above see the same interface as for Pursuit.
Observations are float32, the networks' precision (MuJoCo's float64 is rounded once, here).
Made with ``render_mode="rgb_array"`` (``relayrl eval --record``), game e is drawn as its K
copies' frames side by side. Its config section, ``gym``, is here too.
"""

import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pydantic import Field, model_validator

from relayrl.core.strict import Strict
from relayrl.core.specs import GroupSpec, pixels_of
from relayrl.envs.episodes import EpisodeStats, EpisodeTally
from relayrl.envs.flat_spaces import combinations, env_actions, flat_box, flatten_obs
from relayrl.envs.frames import checked_frame
from relayrl.envs.gym_multiagent import env_spec
from relayrl.envs.pettingzoo_adapter import check_finite_bounds
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection
from relayrl.envs.types import GroupObs, GroupStep


def _spec(env: gym.Env, n_agents: int, name: str) -> GroupSpec:
    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, spaces.Box):
        obs_space = flat_box(obs_space)  # a Discrete as its one-hot vector (FrozenLake, Taxi), a Dict's parts side by side
    ids = tuple(f"{name}_{k}" for k in range(n_agents))
    pixels = pixels_of(obs_space)  # handed on as float32 (below), still read divided by 255
    if isinstance(act_space, (spaces.Discrete, spaces.MultiDiscrete)):
        n = int(act_space.n) if isinstance(act_space, spaces.Discrete) else combinations(act_space)
        return GroupSpec(name, ids, tuple(obs_space.shape), np.dtype(np.float32), n, pixels=pixels)
    if isinstance(act_space, spaces.Box):
        check_finite_bounds(act_space)
        low, high = (tuple(float(v) for v in bound.reshape(-1)) for bound in (act_space.low, act_space.high))
        return GroupSpec(name, ids, tuple(obs_space.shape), np.dtype(np.float32), 0, tuple(act_space.shape), low, high, pixels=pixels)
    raise TypeError(f"K-copies envs need Discrete, MultiDiscrete or Box actions, got {act_space}")


def check_env_id(env_id: str) -> None:
    """Fails with the fix when ``env_id`` (or ``module:EnvId``, whose module is imported) is
    not registered or needs a missing extra."""
    entry = str(env_spec(env_id).entry_point)
    for marker, module in (("mujoco", "mujoco"), ("box2d", "Box2D")):
        if marker in entry:
            try:
                __import__(module)
            except ImportError:
                raise ValueError(f"{env_id} needs {module}: pip install -c constraints.txt -e '.[mujoco]'") from None


@functools.cache
def _action_space(env_id: str, kwargs: str) -> spaces.Space:
    env = gym.make(env_id, **json.loads(kwargs))
    try:
        return env.action_space
    finally:
        env.close()


def action_kind(env_id: str, kwargs: dict[str, Any]) -> str:
    """``discrete`` or ``continuous``: the kind of ``env_id``'s actions (the env is made once)."""
    space = _action_space(env_id, json.dumps(kwargs, sort_keys=True))
    return "discrete" if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)) else "continuous"


@dataclass
class EpisodeLog:
    """How a copy's current episode began (its reset seed, or its RNG state before an
    auto-reset) and the actions taken since, with the latest observation: a checkpoint
    restores a copy by replaying its episode, so it holds data only, for every simulator
    (MuJoCo, Box2D, classic control) alike, and costs at most one episode of steps."""

    start: dict[str, Any]
    actions: list[np.ndarray] = field(default_factory=list)
    obs: np.ndarray | None = None

    def state_dict(self) -> dict[str, Any]:
        return {"start": self.start, "actions": np.array(self.actions), "obs": self.obs}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "EpisodeLog":
        return cls(state["start"], list(state["actions"]), state["obs"])

    def replay(self, env: gym.Env) -> None:
        """Brings a fresh ``env`` to the logged point; ValueError if the replay does not
        reproduce the logged observation (an env that is not deterministic given its seed
        and actions)."""
        if "seed" in self.start:
            obs, _ = env.reset(seed=self.start["seed"])
        else:
            env.reset()  # creates the RNG that the logged state then overwrites
            env.unwrapped.np_random.bit_generator.state = self.start["rng"]
            obs, _ = env.reset()
        for action in self.actions:
            obs, *_ = env.step(action)
        if self.obs is not None and not np.array_equal(obs, self.obs):
            raise ValueError("replaying the episode's actions did not reproduce its last observation")


class GymCopiesEnv:
    """``num_envs`` x ``n_agents`` copies of ``gym.make(env_id, **kwargs)``: a VectorEnv
    whose agents each run their own episodes (``independent_episodes``)."""

    independent_episodes = True

    def __init__(self, env_id: str, n_agents: int, num_envs: int = 1, name: str = "agent", render_mode: str | None = None, **kwargs: Any) -> None:
        if n_agents < 1 or num_envs < 1:
            raise ValueError(f"need n_agents >= 1 and num_envs >= 1, got {n_agents} and {num_envs}")
        check_env_id(env_id)
        self.env_id = env_id
        self.num_envs, self.n_agents = num_envs, n_agents
        if render_mode is not None:
            kwargs = {**kwargs, "render_mode": render_mode}
            os.environ.setdefault("MUJOCO_GL", "egl")  # MuJoCo's renderer reads it as it starts; EGL draws without a display
        self.envs = [gym.make(env_id, **kwargs) for _ in range(num_envs * n_agents)]  # copy (e, k) at e * K + k
        spec = _spec(self.envs[0], n_agents, name)
        self.groups = (spec,)
        space = self.envs[0].observation_space
        self._flattened = None if isinstance(space, spaces.Box) else space  # relayrl.envs.flat_spaces
        self._actions = self.envs[0].action_space
        self.tally = EpisodeTally(len(self.envs), 1, agents_per_copy=n_agents)
        self._logs: list[EpisodeLog] = []  # each copy's episode in flight, for checkpoints

    def _stack(self, values: list[Any]) -> np.ndarray:
        if self._flattened is not None:
            values = [flatten_obs(self._flattened, v) for v in values]
        return np.stack(values).astype(np.float32).reshape(self.num_envs, self.n_agents, *self.groups[0].obs_shape)

    def _env_actions(self, chosen: np.ndarray) -> np.ndarray:
        """The learners' actions as the env takes them: a Discrete's with its ``start``, a
        MultiDiscrete's combination as its choices."""
        if isinstance(self._actions, spaces.MultiDiscrete):
            return env_actions(self._actions, chosen)
        if isinstance(self._actions, spaces.Discrete) and self._actions.start != 0:
            return chosen + int(self._actions.start)
        return chosen

    def reset(self, seed: int) -> list[GroupObs]:
        """Copy (e, k) is reset with seed ``seed + e * K + k``: agent k's training copy gets
        seed + k (paper 001's seeding); later episodes continue each copy's own RNG."""
        obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)]
        self._logs = [EpisodeLog({"seed": seed + i}, obs=o) for i, o in enumerate(obs)]
        self.tally.clear()
        return [GroupObs(self._stack(obs), np.ones((self.num_envs, self.n_agents), bool))]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]`` is ``[E, K, ...]``; copies whose episode ended are reset on their own."""
        flat_actions = self._env_actions(actions[0].reshape(len(self.envs), *actions[0].shape[2:]))
        obs, next_obs = [], []
        reward = np.zeros(len(self.envs))
        terminated, truncated = np.zeros(len(self.envs), bool), np.zeros(len(self.envs), bool)
        for i, env in enumerate(self.envs):
            o, r, term, trunc, _ = env.step(flat_actions[i])
            reward[i], terminated[i], truncated[i] = r, term, trunc
            next_obs.append(o)
            self._logs[i].actions.append(flat_actions[i].copy())
            if term or trunc:
                self._logs[i] = EpisodeLog({"rng": env.unwrapped.np_random.bit_generator.state})
                o, _ = env.reset()
            self._logs[i].obs = o
            obs.append(o)
        self.tally.add(reward[:, None], terminated | truncated)
        shape = (self.num_envs, self.n_agents)
        step = GroupStep(
            self._stack(obs),
            self._stack(next_obs),
            reward.astype(np.float32).reshape(shape),
            terminated.reshape(shape),
            truncated.reshape(shape),
            np.ones(shape, bool),
        )
        return [step], np.zeros(self.num_envs, bool)  # no joint episode: each copy resets on its own

    def drain_episodes(self) -> EpisodeStats:
        return self.tally.drain()

    def cut_episodes(self) -> EpisodeStats:
        return self.tally.cut()

    def get_state(self) -> dict[str, Any]:
        """Every copy's episode in flight (its start and actions), so a resumed run replays
        it and continues exactly."""
        copies = [log.state_dict() for log in self._logs]
        return {"env_id": self.env_id, "copies": copies, "returns": self.tally.returns[:, 0].copy(), "lengths": self.tally.lengths.copy()}

    def set_state(self, state: dict[str, Any]) -> None:
        if state["env_id"] != self.env_id or len(state["copies"]) != len(self.envs):
            raise ValueError(f"saved for {len(state['copies'])} copies of {state['env_id']}, not {len(self.envs)} of {self.env_id}")
        logs = [EpisodeLog.from_state(copy_state) for copy_state in state["copies"]]
        for env, log in zip(self.envs, logs):
            log.replay(env)
        self._logs = logs
        self.tally.returns[:, 0], self.tally.lengths[:] = state["returns"], state["lengths"]

    def render(self, game: int) -> np.ndarray:
        """Game ``game``'s K copies as they stand, side by side (made with ``render_mode="rgb_array"``)."""
        copies = self.envs[game * self.n_agents: (game + 1) * self.n_agents]
        return np.concatenate([checked_frame(env.render(), f"{self.env_id} copy {game * self.n_agents + k}") for k, env in enumerate(copies)], axis=1)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def make_gym_copies(num_envs: int, env_id: str, n_agents: int, kwargs: dict[str, Any] | None = None, render_mode: str | None = None) -> GymCopiesEnv:
    """The ``gym`` env factory's batched constructor."""
    return GymCopiesEnv(env_id, n_agents, num_envs, render_mode=render_mode, **(kwargs or {}))


class GymSettings(Strict):
    """K copies of one single-agent Gymnasium env as one K-agent team (DASE, paper 001):
    agent k acts only in copy k, seeded seed + k."""

    env_id: str = "HalfCheetah-v5"
    n_agents: int = Field(2, ge=1, description="K: agents, one env copy each")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="passed to gymnasium.make")

    @model_validator(mode="after")
    def _registered(self) -> "GymSettings":
        check_env_id(self.env_id)
        return self


class GymSection(EnvSection):
    """A Gymnasium env copied K times; its one team is ``agent``."""

    name: Literal["gym"] = "gym"
    actions = "any"
    # a factory: the default task is checked (it needs the mujoco extra) only when a gym env is configured
    settings: GymSettings = Field(default_factory=GymSettings)

    @model_validator(mode="after")
    def _one_copy_set(self) -> "GymSection":
        if self.num_envs != 1 or self.vector != "sync":
            raise ValueError("gym envs already step K copies, one per agent: leave env.num_envs=1 and env.vector=sync")
        return self

    def group_names(self) -> list[str]:
        return ["agent"]

    def action_kind(self) -> str:
        """Discrete or continuous, as the Gymnasium env's action space is."""
        return action_kind(self.settings.env_id, self.settings.kwargs)


ENVS.add("gym", EnvEntry(lambda settings: EnvFactory(None, dict(settings), vectorised=make_gym_copies), GymSection))
