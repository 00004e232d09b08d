"""E games of MPE agents and landmarks stepped as arrays: what ``cooperative-navigation``
and ``simple-spread`` share (spawning, the physics step, auto-reset at ``max_cycles``,
episode bookkeeping, saving and loading through ``ArrayGames``). Each game decides how its actions become forces,
what it rewards and what its agents observe."""

from typing import Any

import numpy as np

from relayrl.core.specs import GroupSpec
from relayrl.envs.array_games import ArrayGames
from relayrl.envs.episodes import EpisodeTally
from relayrl.envs.particles import Bodies, contact_forces, integrate
from relayrl.envs.types import GroupObs, GroupStep


class ParticleGames(ArrayGames):
    """Agents ``[E, N, 2]`` (positions and velocities, radius ``agent_size``) and N landmarks
    ``[E, N, 2]``; starts and landmarks uniform in ``[-1, 1]^2`` (agents first, then the
    landmarks, as MPE's ``reset_world`` draws them), velocities 0. One group of
    ``self.agents`` learners; an episode ends by truncation after ``max_cycles`` steps."""

    independent_episodes = False
    kind: str  # the env's registered name, which its saved state carries (and names it in messages)
    seed_tag: int  # mixed into the run's seed, so each game draws its own starts
    groups: tuple[GroupSpec, ...]
    agents: int  # learners per game

    def __init__(self, num_envs: int, n_agents: int, agent_size: float, collide: bool, max_cycles: int, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.num_envs = num_envs
        self.N = n_agents
        self.max_cycles = max_cycles
        self.collide = collide
        # each agent's others, in agent order without itself: [N, N - 1]
        self.others = np.array([[j for j in range(n_agents) if j != i] for i in range(n_agents)], np.int64).reshape(n_agents, n_agents - 1)
        self.rng = np.random.default_rng()
        self.bodies = Bodies(np.zeros((num_envs, n_agents, 2)), np.zeros((num_envs, n_agents, 2)), np.full(n_agents, agent_size), np.full(n_agents, collide))
        self.targets = np.zeros((num_envs, n_agents, 2))
        self.frames = np.zeros(num_envs, np.int64)
        self.tally = EpisodeTally(num_envs, 1)

    @property
    def label(self) -> str:
        return self.kind

    # ----- what each game defines -------------------------------------------------------
    def observe(self) -> np.ndarray:
        """``[E, agents, obs]``."""
        raise NotImplementedError

    def state(self) -> np.ndarray:
        """``[E, state]``."""
        raise NotImplementedError

    def act(self, actions: np.ndarray) -> np.ndarray:
        """Checks the learners' actions and returns each entity's force ``[E, N, 2]``."""
        raise NotImplementedError

    def rewards(self) -> np.ndarray:
        """Each learner's reward ``[E, agents]`` after the physics step."""
        raise NotImplementedError

    # ----- shared -----------------------------------------------------------------------
    def _spawn(self, games: np.ndarray) -> None:
        k = len(games)
        self.bodies.pos[games] = self.rng.uniform(-1.0, 1.0, (k, self.N, 2))
        self.bodies.vel[games] = 0.0
        self.targets[games] = self.rng.uniform(-1.0, 1.0, (k, self.N, 2))
        self.frames[games] = 0

    def distances(self) -> np.ndarray:
        """``[E, agent, landmark]``: centre distances."""
        return np.sqrt(np.square(self.bodies.pos[:, :, None, :] - self.targets[:, None, :, :]).sum(-1))

    def relative(self) -> tuple[np.ndarray, np.ndarray]:
        """Each agent's view of the landmarks ``[E, N, 2N]`` and of the other agents
        ``[E, N, 2(N - 1)]``, relative to its own position."""
        pos, e = self.bodies.pos, self.num_envs
        landmarks = self.targets[:, None, :, :] - pos[:, :, None, :]
        others = pos[:, self.others, :] - pos[:, :, None, :]
        return landmarks.reshape(e, self.N, -1), others.reshape(e, self.N, -1)

    def advance(self, force: np.ndarray) -> None:
        """One physics step of every game from the actions' forces ``[E, N, 2]``."""
        if self.collide:
            force = force + contact_forces(self.bodies)
        integrate(self.bodies, force)
        self.frames += 1

    def _observed(self) -> GroupObs:
        return GroupObs(self.observe(), np.ones((self.num_envs, self.agents), bool), self.state())

    def reset(self, seed: int) -> list[GroupObs]:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, self.seed_tag]))
        self._spawn(np.arange(self.num_envs))
        self.tally.clear()
        return [self._observed()]

    def step(self, actions: list[np.ndarray]) -> tuple[list[GroupStep], np.ndarray]:
        """``actions[0]``: the group's actions (``act`` says which); games that reach
        ``max_cycles`` are reset (``next_obs`` keeps the final observation)."""
        self.advance(self.act(np.asarray(actions[0])))
        reward = self.rewards()
        truncated = self.frames >= self.max_cycles
        final = self._observed()
        self.tally.add(reward.sum(1, keepdims=True), truncated)
        observed = final
        if truncated.any():
            self._spawn(np.flatnonzero(truncated))
            observed = self._observed()
        agents = (self.num_envs, self.agents)
        step = GroupStep(
            obs=observed.obs,
            next_obs=final.obs,
            reward=reward.astype(np.float32),
            terminated=np.zeros(agents, bool),
            truncated=np.broadcast_to(truncated[:, None], agents).copy(),
            alive=observed.alive,
            state=observed.state,
            next_state=final.state,
        )
        return [step], truncated

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.bodies.pos, self.bodies.vel, self.targets, self.frames)

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        self.bodies.pos, self.bodies.vel, self.targets, self.frames = arrays
