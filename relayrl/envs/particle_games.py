"""E games of MPE agents and landmarks stepped as arrays: what ``cooperative-navigation``,
``simple-spread``, ``simple-tag`` and ``simple-reference`` share (spawning, the physics
step, auto-reset at ``max_cycles``, episode bookkeeping per group, saving and loading
through ``ArrayGames``). Each game decides how its actions become forces, what it rewards
and what its agents observe."""

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import model_validator

from relayrl.core.specs import GroupSpec
from relayrl.envs.array_games import ArrayGames
from relayrl.envs.episodes import EpisodeTally
from relayrl.envs.frames import GROUP_COLOURS, LANDMARK, OBSTACLE, disks
from relayrl.envs.particles import Bodies, contact_forces, integrate
from relayrl.envs.section import EnvSection
from relayrl.envs.types import GroupObs, GroupStep


LANDMARK_SIZE = 0.05  # how MPE draws a landmark of no size


@dataclass(frozen=True)
class Landmarks:
    """A game's landmarks: how many, where they start (uniform in ``[-spread, spread]^2``,
    drawn after the agents, as MPE's ``reset_world`` does) and, for obstacles, their
    radius (``size`` > 0: agents bounce off them; they never move)."""

    count: int
    spread: float = 1.0
    size: float = 0.0


def move_group(name: str, ids: tuple[str, ...], obs_size: int, state_size: int, continuous: bool) -> GroupSpec:
    """A group that acts with mpe2's moves: one of five, or five numbers in ``[0, 1]``."""
    return GroupSpec(
        name, ids, (obs_size,), np.dtype(np.float32), 0 if continuous else 5, action_shape=(5,) if continuous else (),
        action_low=(0.0,) * 5 if continuous else (), action_high=(1.0,) * 5 if continuous else (), state_shape=(state_size,),
    )


class ParticleGames(ArrayGames):
    """Agents ``[E, N, 2]`` (positions and velocities, radii ``agent_size [N]``) and landmarks
    ``[E, L, 2]``; agents start uniform in ``[-1, 1]^2`` with velocity 0. The learners
    (``agents`` per game) are split into ``groups``, consecutive in the order of the group
    specs; an episode ends by truncation after ``max_cycles`` steps."""

    independent_episodes = False
    velocity_first = False  # the integration order of mpe2 (``relayrl.envs.particles.integrate``)
    kind: str  # the env's registered name, which its saved state carries (and names it in messages)
    seed_tag: int  # mixed into the run's seed, so each game draws its own starts

    def __init__(
        self, num_envs: int, groups: tuple[GroupSpec, ...], agent_size: np.ndarray, collide: bool, max_cycles: int,
        settings: dict[str, Any], landmarks: Landmarks, max_speed: np.ndarray | None = None,
    ) -> None:
        self.groups = groups
        self.group_rows = np.cumsum([0, *(spec.n_agents for spec in groups)])  # each group's learners: [rows[g], rows[g + 1])
        self.agents = int(self.group_rows[-1])
        self.tally = EpisodeTally(num_envs, len(groups))  # per group, its learners' summed return
        self.settings = settings
        self.num_envs = num_envs
        size = np.asarray(agent_size, np.float64)
        n = self.N = len(size)
        self.max_cycles = max_cycles
        self.collide = collide
        self.landmarks = landmarks
        self.max_speed = max_speed
        # each agent's others, in agent order without itself: [N, N - 1]
        self.others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64).reshape(n, n - 1)
        self.rng = np.random.default_rng()
        self.bodies = Bodies(np.zeros((num_envs, n, 2)), np.zeros((num_envs, n, 2)), size, np.full(n, collide))
        self.targets = np.zeros((num_envs, landmarks.count, 2))
        # every body that collides, agents first: obstacles push agents and are never pushed
        self.obstacles = landmarks.size > 0
        self.contact_size = np.concatenate([size, np.full(landmarks.count, landmarks.size)]) if self.obstacles else size
        self.contact_collide = np.concatenate([self.bodies.collide, np.ones(landmarks.count, bool)]) if self.obstacles else self.bodies.collide
        self.frames = np.zeros(num_envs, np.int64)

    @property
    def label(self) -> str:
        return self.kind

    # ----- what each game defines -------------------------------------------------------
    def observe(self) -> list[np.ndarray]:
        """Per group, ``[E, n_agents, obs]``."""
        raise NotImplementedError

    def state(self) -> np.ndarray:
        """``[E, state]``."""
        raise NotImplementedError

    def act(self, actions: list[np.ndarray]) -> np.ndarray:
        """Checks each group's actions and returns each agent's force ``[E, N, 2]``."""
        raise NotImplementedError

    def rewards(self) -> np.ndarray:
        """Each learner's reward ``[E, agents]`` after the physics step."""
        raise NotImplementedError

    def spawn(self, games: np.ndarray) -> None:
        """New episodes in ``games``: agents, then landmarks (a game adds what else it draws)."""
        k = len(games)
        self.bodies.pos[games] = self.rng.uniform(-1.0, 1.0, (k, self.N, 2))
        self.bodies.vel[games] = 0.0
        spread = self.landmarks.spread
        self.targets[games] = self.rng.uniform(-spread, spread, (k, self.landmarks.count, 2))
        self.frames[games] = 0

    # ----- shared -----------------------------------------------------------------------
    def distances(self) -> np.ndarray:
        """``[E, agent, landmark]``: centre distances."""
        return np.sqrt(np.square(self.bodies.pos[:, :, None, :] - self.targets[:, None, :, :]).sum(-1))

    def relative(self) -> tuple[np.ndarray, np.ndarray]:
        """Each agent's view of the landmarks ``[E, N, 2L]`` and of the other agents
        ``[E, N, 2(N - 1)]``, relative to its own position."""
        pos, e = self.bodies.pos, self.num_envs
        landmarks = self.targets[:, None, :, :] - pos[:, :, None, :]
        others = pos[:, self.others, :] - pos[:, :, None, :]
        return landmarks.reshape(e, self.N, -1), others.reshape(e, self.N, -1)

    def advance(self, force: np.ndarray) -> None:
        """One physics step of every game from the actions' forces ``[E, N, 2]``."""
        if self.collide:
            pos = np.concatenate([self.bodies.pos, self.targets], 1) if self.obstacles else self.bodies.pos
            force = force + contact_forces(pos, self.contact_size, self.contact_collide)[:, : self.N]
        integrate(self.bodies, force, self.max_speed, self.velocity_first)
        self.frames += 1

    def _observed(self) -> list[GroupObs]:
        state = self.state()
        return [GroupObs(obs, np.ones(obs.shape[:2], bool), state) for obs in self.observe()]

    def reset(self, seed: int) -> list[GroupObs]:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, self.seed_tag]))
        self.spawn(np.arange(self.num_envs))
        self.tally.clear()
        return self._observed()

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions``: each group's actions (``act`` says which); games that reach
        ``max_cycles`` are reset (``next_obs`` keeps the final observation)."""
        self.advance(self.act([np.asarray(a) for a in actions]))
        reward = self.rewards()
        truncated = self.frames >= self.max_cycles
        final = self._observed()
        rows = self.group_rows
        self.tally.add(np.add.reduceat(reward, rows[:-1], axis=1), truncated)
        observed = final
        if truncated.any():
            self.spawn(np.flatnonzero(truncated))
            observed = self._observed()
        steps = []
        for g, (first, last) in enumerate(zip(final, observed)):
            agents = (self.num_envs, self.groups[g].n_agents)
            steps.append(GroupStep(
                obs=last.obs,
                next_obs=first.obs,
                reward=reward[:, rows[g] : rows[g + 1]].astype(np.float32),
                terminated=np.zeros(agents, bool),
                truncated=np.broadcast_to(truncated[:, None], agents).copy(),
                alive=last.alive,
                state=last.state,
                next_state=first.state,
            ))
        return steps, truncated

    def landmark_look(self, game: int) -> tuple[np.ndarray, np.ndarray]:
        """How ``render`` draws game ``game``'s landmarks: radii ``[L]`` and colours ``[L, 3]``
        (obstacles grey at their size; targets dark, as disks of MPE's landmark size)."""
        size, colour = (self.landmarks.size, OBSTACLE) if self.obstacles else (LANDMARK_SIZE, LANDMARK)
        return np.full(self.landmarks.count, size), np.broadcast_to(colour, (self.landmarks.count, 3))

    def render(self, game: int) -> np.ndarray:
        """Game ``game`` from above: the agents, coloured by group where each body is a
        learner (one colour where one learner moves them all), and the landmarks over them
        (``landmark_look``), so that a target an agent covers stays in view."""
        if self.agents == self.N:
            group_of_agent = np.repeat(np.arange(len(self.groups)), np.diff(self.group_rows))
            agent_colours = GROUP_COLOURS[group_of_agent % len(GROUP_COLOURS)]
        else:
            agent_colours = np.broadcast_to(GROUP_COLOURS[0], (self.N, 3))
        landmark_radii, landmark_colours = self.landmark_look(game)
        centres = np.concatenate([self.bodies.pos[game], self.targets[game]])
        return disks(centres, np.concatenate([self.bodies.size, landmark_radii]), np.concatenate([agent_colours, landmark_colours]))

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.bodies.pos, self.bodies.vel, self.targets, self.frames)

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        self.bodies.pos, self.bodies.vel, self.targets, self.frames = arrays


class ParticleSection(EnvSection):
    """The config section of a particle game: its games run as arrays in this process, and
    its settings' ``continuous_actions`` chooses the action kind."""

    actions: ClassVar[str] = "any"  # its settings choose: action_kind() tells

    @model_validator(mode="after")
    def _vector_kind(self) -> "ParticleSection":
        if self.vector != "sync":
            raise ValueError(f"{getattr(self, 'name')} runs its games as arrays in-process: use env.vector=sync")
        return self

    def action_kind(self) -> str:
        return "continuous" if getattr(self, "settings").continuous_actions else "discrete"
