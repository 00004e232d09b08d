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

Two settings take what the authors' public navigation env (``CoverEnv`` in the AI Arena's
examples) has and MPE has not: ``walls`` keep the agents in the square of the targets, and
``observe_occupied`` adds a flag per target, whether it is occupied, to each observation.
"""

from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pydantic import Field, model_validator

from relayrl.core.specs import GroupSpec
from relayrl.core.strict import Strict
from relayrl.envs.frames import GROUP_COLOURS, LANDMARK
from relayrl.envs.one_game import OneGameParallelEnv
from relayrl.envs.particle_games import Landmarks, ParticleGames, ParticleSection
from relayrl.envs.particles import action_force, confine
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory


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
    observe_occupied: bool = Field(False, description="each agent also sees which targets are occupied (one flag per target), as the AI Arena's public env shows them")
    walls: bool = Field(False, description="agents stay in [-1, 1]^2, where the targets are: positions clipped to it and velocity across a wall stopped (MPE has no walls)")

    @model_validator(mode="after")
    def _joint_forces(self) -> "NavigationSettings":
        if self.joint_agent and not self.continuous_actions:
            raise ValueError("joint_agent acts with every entity's force at once: it needs continuous_actions=true")
        return self


class NavigationVectorEnv(ParticleGames):
    """E games stepped as arrays: agents ``[E, N, 2]`` (positions and velocities), targets
    ``[E, N, 2]``."""

    kind = "cooperative-navigation"
    seed_tag = 0x4E41

    def __init__(self, num_envs: int, **settings: Any) -> None:
        s = NavigationSettings(**settings)
        self.s = s
        n = s.n_agents
        self.obs_size = 4 + 2 * n + 2 * (n - 1) + (n if s.observe_occupied else 0)
        self.state_size = 6 * n
        continuous = s.continuous_actions
        # the agents the learners see: the entities, or one agent for all of them (joint_agent)
        agents, per_agent = (1, n) if s.joint_agent else (n, 1)
        ids = ("team",) if s.joint_agent else tuple(f"agent_{i}" for i in range(n))
        force = 2 * per_agent
        groups = (
            GroupSpec(
                "agent", ids, (self.obs_size * per_agent,), np.dtype(np.float32), 0 if continuous else 5,
                action_shape=(force,) if continuous else (), action_low=(-1.0,) * force if continuous else (),
                action_high=(1.0,) * force if continuous else (), state_shape=(self.state_size,),
            ),
        )
        super().__init__(num_envs, groups, np.full(n, s.agent_size), s.collide, s.max_cycles, s.model_dump(), Landmarks(n))

    def advance(self, force: np.ndarray) -> None:
        super().advance(force)
        if self.s.walls:
            confine(self.bodies, 1.0)

    def occupied(self) -> np.ndarray:
        """``[E, N]``: whether some agent's centre is within the radius of each target."""
        return self.distances().min(1) < self.s.occupied_radius

    def landmark_look(self, game: int) -> tuple[np.ndarray, np.ndarray]:
        """Each target as the disk an agent's centre must reach, green while occupied."""
        occupied = self.occupied()[game]
        return np.full(self.landmarks.count, self.s.occupied_radius), np.where(occupied[:, None], GROUP_COLOURS[2], LANDMARK)

    def observe(self) -> list[np.ndarray]:
        landmarks, others = self.relative()
        parts = [self.bodies.vel, self.bodies.pos, landmarks, others]
        if self.s.observe_occupied:
            parts.append(np.broadcast_to(self.occupied()[:, None, :], (self.num_envs, self.N, self.N)))
        obs = np.concatenate(parts, axis=-1).astype(np.float32)
        return [obs.reshape(self.num_envs, self.agents, -1)]

    def state(self) -> np.ndarray:
        e = self.num_envs
        return np.concatenate([self.bodies.pos.reshape(e, -1), self.bodies.vel.reshape(e, -1), self.targets.reshape(e, -1)], 1).astype(np.float32)

    def team_reward(self) -> np.ndarray:
        """``[E]``: ``reward_per_target`` for each occupied target."""
        return self.occupied().sum(1) * self.s.reward_per_target

    def rewards(self) -> np.ndarray:
        """The team's reward split evenly over the learners."""
        return np.broadcast_to((self.team_reward() / self.agents)[:, None], (self.num_envs, self.agents))

    def act(self, actions: list[np.ndarray]) -> np.ndarray:
        """``[E, N, 2]`` forces (``[E, 1, 2N]`` with ``joint_agent``) or ``[E, N]`` moves."""
        (chosen,) = actions
        (spec,) = self.groups
        shape = (self.num_envs, self.agents, *spec.action_shape)
        if chosen.shape != shape or (not self.s.continuous_actions and (chosen.min() < 0 or chosen.max() >= 5)):
            kind = "forces in [-1, 1]" if self.s.continuous_actions else "integer moves in [0, 5)"
            raise ValueError(f"cooperative-navigation actions must be {kind} of shape {shape}, got {chosen.shape}")
        return action_force(chosen.reshape(self.num_envs, self.N, 2) if self.s.joint_agent else chosen, self.s.continuous_actions)


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
        obs = self.game.observe()[0][0].reshape(self.game.agents, -1)
        return {a: obs[i] for i, a in enumerate(self.possible_agents)}

    def step(self, actions: dict[str, Any]):
        game = self.game
        (spec,) = game.groups
        idle = np.zeros(spec.action_shape) if game.s.continuous_actions else 0
        chosen = np.array([[actions.get(a, idle) for a in self.possible_agents]]).reshape(1, game.N, -1)
        game.advance(action_force(chosen if game.s.continuous_actions else chosen[..., 0], game.s.continuous_actions))
        return self._stepped(float(game.team_reward()[0]) / game.agents, False, bool(game.frames[0] >= game.s.max_cycles))


class NavigationSection(ParticleSection):
    """``cooperative-navigation``: E games as arrays."""

    name: Literal["cooperative-navigation"] = "cooperative-navigation"
    settings: NavigationSettings = NavigationSettings()

    def group_names(self) -> list[str]:
        return ["agent"]


def _factory(settings: dict[str, Any]) -> EnvFactory:
    return EnvFactory(NavigationParallelEnv, dict(settings), vectorised=NavigationVectorEnv)


ENVS.add("cooperative-navigation", EnvEntry(_factory, NavigationSection))
