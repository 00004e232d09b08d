"""Cooperative navigation as the AI Arena recreated it (paper 004, section 4.2 and Figs.
10-11), batched over E games in NumPy, with a PettingZoo face.

N agents and N targets in the plane. The team earns ``reward_per_target`` (paper 004: +1)
for every target an agent occupies, at every step, for ``max_cycles`` steps (paper 004:
300, so 900 at most with 3 agents); there is no collision penalty, and the reward is split
evenly over the agents, so a group's summed reward is the team's. ``joint_agent`` makes
the N entities one agent (paper 004's third assignment: one SAC agent whose action is
the three entities' actions together). The physics are MPE's
simple_spread (``relayrl.envs.particles``; the paper took the task from MADDPG's MPE),
with its constants: agents of radius 0.15 that push each other apart, starts and targets
uniform in ``[-1, 1]^2``, velocities 0 at the start; a target counts as occupied when an
agent's centre is within 0.1 of it (simple_spread's occupancy radius). Actions: a force in
``[-1, 1]^2`` (times MPE's acceleration 5), or MPE's five discrete moves.

Each agent observes, as simple_spread without its (silent) communication: its velocity, its
position, the targets' positions relative to it and the other agents' relative positions.
The global state: every agent's position and velocity and the targets' positions.
"""

from dataclasses import asdict
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces
from pydantic import Field, model_validator

from relayrl.core.specs import GroupSpec
from relayrl.core.strict import Strict
from relayrl.envs.episodes import EpisodeStats, EpisodeTally
from relayrl.envs.one_game import OneGameParallelEnv
from relayrl.envs.particles import Bodies, action_force, contact_forces, integrate
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory
from relayrl.envs.section import EnvSection
from relayrl.envs.types import GroupObs, GroupStep


class NavigationSettings(Strict):
    """Defaults: paper 004's task (3 agents, 300 steps, +1 per occupied target per step)
    on simple_spread's physics."""

    n_agents: int = Field(3, ge=1, description="agents, and as many targets")
    max_cycles: int = Field(300, ge=1)
    reward_per_target: float = Field(1.0, description="to the team, per occupied target per step")
    occupied_radius: float = Field(0.1, gt=0, description="a target is occupied by an agent whose centre is this close")
    agent_size: float = Field(0.15, gt=0)
    collide: bool = Field(True, description="agents push each other apart (never a penalty)")
    continuous_actions: bool = True
    joint_agent: bool = Field(False, description="one agent drives every entity: the entities' observations side by side, their forces as one action")

    @model_validator(mode="after")
    def _joint_forces(self) -> "NavigationSettings":
        if self.joint_agent and not self.continuous_actions:
            raise ValueError("joint_agent acts with every entity's force at once: it needs continuous_actions=true")
        return self


class NavigationVectorEnv:
    """E games stepped as arrays: agents ``[E, N, 2]`` (positions and velocities), targets
    ``[E, N, 2]``."""

    independent_episodes = False

    def __init__(self, num_envs: int, **settings: Any) -> None:
        self.s = s = NavigationSettings(**settings)
        self.settings = s.model_dump()
        self.num_envs = num_envs
        self.N = n = s.n_agents
        self.obs_size = 4 + 2 * n + 2 * (n - 1)
        self.state_size = 6 * n
        continuous = s.continuous_actions
        # the agents the learners see: the entities, or one agent for all of them (joint_agent)
        self.agents, per_agent = (1, n) if s.joint_agent else (n, 1)
        ids = ("team",) if s.joint_agent else tuple(f"agent_{i}" for i in range(n))
        force = 2 * per_agent
        self.groups = (
            GroupSpec(
                "agent", ids, (self.obs_size * per_agent,), np.dtype(np.float32), 0 if continuous else 5,
                action_shape=(force,) if continuous else (), action_low=(-1.0,) * force if continuous else (),
                action_high=(1.0,) * force if continuous else (), state_shape=(self.state_size,),
            ),
        )
        # each agent's others, in agent order without itself: [N, N - 1]
        self.others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64).reshape(n, n - 1)
        self.rng = np.random.default_rng()
        self.bodies = Bodies(np.zeros((num_envs, n, 2)), np.zeros((num_envs, n, 2)), np.full(n, s.agent_size), np.full(n, s.collide))
        self.targets = np.zeros((num_envs, n, 2))
        self.frames = np.zeros(num_envs, np.int64)
        self.tally = EpisodeTally(num_envs, 1)

    def _spawn(self, games: np.ndarray) -> None:
        k = len(games)
        self.bodies.pos[games] = self.rng.uniform(-1.0, 1.0, (k, self.N, 2))
        self.bodies.vel[games] = 0.0
        self.targets[games] = self.rng.uniform(-1.0, 1.0, (k, self.N, 2))
        self.frames[games] = 0

    def occupied(self) -> np.ndarray:
        """``[E, N]``: whether some agent's centre is within the radius of each target."""
        dist = np.sqrt(np.square(self.bodies.pos[:, :, None, :] - self.targets[:, None, :, :]).sum(-1))  # [E, agent, target]
        return dist.min(1) < self.s.occupied_radius

    def observe(self) -> np.ndarray:
        pos, vel = self.bodies.pos, self.bodies.vel
        targets = self.targets[:, None, :, :] - pos[:, :, None, :]  # [E, N, targets, 2]
        others = pos[:, self.others, :] - pos[:, :, None, :]  # [E, N, N - 1, 2]
        e = self.num_envs
        parts = (vel, pos, targets.reshape(e, self.N, -1), others.reshape(e, self.N, -1))
        return np.concatenate(parts, axis=-1).astype(np.float32)

    def state(self) -> np.ndarray:
        e = self.num_envs
        return np.concatenate([self.bodies.pos.reshape(e, -1), self.bodies.vel.reshape(e, -1), self.targets.reshape(e, -1)], 1).astype(np.float32)

    def _observed(self) -> GroupObs:
        obs = self.observe().reshape(self.num_envs, self.agents, -1)
        return GroupObs(obs, np.ones((self.num_envs, self.agents), bool), self.state())

    def advance(self, actions: np.ndarray) -> np.ndarray:
        """One step of every game's physics; returns the team reward ``[E]``."""
        force = action_force(actions, self.s.continuous_actions)
        if self.s.collide:
            force = force + contact_forces(self.bodies)
        integrate(self.bodies, force)
        self.frames += 1
        return self.occupied().sum(1) * self.s.reward_per_target

    # ----- VectorEnv --------------------------------------------------------------------
    def reset(self, seed: int) -> list[GroupObs]:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4E41]))
        self._spawn(np.arange(self.num_envs))
        self.tally.clear()
        return [self._observed()]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]``: ``[E, N, 2]`` forces or ``[E, N]`` moves; games that end are reset
        (``next_obs`` keeps the final observation)."""
        chosen = np.asarray(actions[0])
        (spec,) = self.groups
        shape = (self.num_envs, self.agents, *spec.action_shape)
        if chosen.shape != shape or (not self.s.continuous_actions and (chosen.min() < 0 or chosen.max() >= 5)):
            kind = "forces in [-1, 1]" if self.s.continuous_actions else "integer moves in [0, 5)"
            raise ValueError(f"cooperative-navigation actions must be {kind} of shape {shape}, got {chosen.shape}")
        team = self.advance(chosen.reshape(self.num_envs, self.N, 2) if self.s.joint_agent else chosen)
        truncated = self.frames >= self.s.max_cycles
        final = self._observed()
        self.tally.add(team[:, None], truncated)
        observed = final
        if truncated.any():
            self._spawn(np.flatnonzero(truncated))
            observed = self._observed()
        agents = (self.num_envs, self.agents)
        step = GroupStep(
            obs=observed.obs,
            next_obs=final.obs,
            reward=np.broadcast_to((team / self.agents).astype(np.float32)[:, None], agents).copy(),
            terminated=np.zeros(agents, bool),
            truncated=np.broadcast_to(truncated[:, None], agents).copy(),
            alive=observed.alive,
            state=observed.state,
            next_state=final.state,
        )
        return [step], truncated

    def drain_episodes(self) -> EpisodeStats:
        return self.tally.drain()

    def cut_episodes(self) -> EpisodeStats:
        return self.tally.cut()

    def get_state(self) -> dict[str, Any]:
        """Every game's bodies, targets, frames and RNG with the episode accumulators, as data."""
        arrays = (self.bodies.pos, self.bodies.vel, self.targets, self.frames, self.tally.returns, self.tally.lengths)
        return {
            "kind": "cooperative-navigation",
            "settings": self.settings,
            "num_envs": self.num_envs,
            "rng": self.rng.bit_generator.state,
            "arrays": tuple(a.copy() for a in arrays),
            "episodes": asdict(self.tally.ended),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("kind") != "cooperative-navigation":
            raise ValueError("this env state was not saved by cooperative-navigation")
        if state["settings"] != self.settings or state["num_envs"] != self.num_envs:
            raise ValueError("this env state belongs to different cooperative-navigation settings or a different num_envs")
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        pos, vel, targets, frames, returns, lengths = (np.array(a) for a in state["arrays"])
        self.bodies.pos, self.bodies.vel, self.targets, self.frames = pos, vel, targets, frames
        self.tally.load_state_dict({"returns": returns, "lengths": lengths, "episodes": state["episodes"]})

    def close(self) -> None:
        pass


class NavigationParallelEnv(OneGameParallelEnv):
    """One game behind PettingZoo's Parallel API; ``state()`` as the vector env's."""

    metadata = {"name": "cooperative_navigation_v0", "render_modes": []}

    def __init__(self, **settings: Any) -> None:
        self.game = NavigationVectorEnv(1, **settings)
        (spec,) = self.game.groups
        self.possible_agents = list(spec.agent_ids)
        self.agents: list[str] = []
        self._observation_space = spaces.Box(-np.inf, np.inf, spec.obs_shape, np.float32)
        self._action_space = spaces.Box(-1.0, 1.0, spec.action_shape, np.float32) if spec.continuous else spaces.Discrete(5)
        self.state_space = spaces.Box(-np.inf, np.inf, spec.state_shape, np.float32)

    def _observations(self) -> dict[str, np.ndarray]:
        obs = self.game.observe()[0].reshape(self.game.agents, -1)
        return {a: obs[i] for i, a in enumerate(self.possible_agents)}

    def step(self, actions: dict[str, Any]):
        game = self.game
        (spec,) = game.groups
        idle = np.zeros(spec.action_shape) if game.s.continuous_actions else 0
        chosen = np.array([[actions.get(a, idle) for a in self.possible_agents]]).reshape(1, game.N, -1)
        team = game.advance(chosen if game.s.continuous_actions else chosen[..., 0])
        return self._stepped(float(team[0]) / game.agents, False, bool(game.frames[0] >= game.s.max_cycles))


class NavigationSection(EnvSection):
    """``cooperative-navigation``: E games as arrays."""

    name: Literal["cooperative-navigation"] = "cooperative-navigation"
    settings: NavigationSettings = NavigationSettings()
    actions: ClassVar[str] = "any"  # its settings choose: action_kind() tells

    @model_validator(mode="after")
    def _vector_kind(self) -> "NavigationSection":
        if self.vector != "sync":
            raise ValueError("cooperative-navigation runs its games as arrays in-process: use env.vector=sync")
        return self

    def action_kind(self) -> str:
        return "continuous" if self.settings.continuous_actions else "discrete"

    def group_names(self) -> list[str]:
        return ["agent"]


def _factory(settings: dict[str, Any]) -> EnvFactory:
    return EnvFactory(NavigationParallelEnv, dict(settings), vectorised=NavigationVectorEnv)


ENVS.add("cooperative-navigation", EnvEntry(_factory, NavigationSection))
