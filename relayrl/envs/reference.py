"""``simple-reference``: MPE's referential game (Lowe et al. 2017) exactly as PettingZoo's
``mpe2.simple_reference_v3`` steps it, batched over E games in NumPy.

Same settings (``local_ratio``, ``max_cycles``, ``continuous_actions``; mpe2's defaults 0.5,
25, false); ``tests/envs/test_reference.py`` checks every output against the installed
``mpe2``. From mpe2's ``simple_reference`` scenario and ``SimpleEnv``:

- Two agents that do not collide, three landmarks coloured red, green and blue; agents and
  landmarks start uniform in ``[-1, 1]^2``. Each agent draws a landmark (its ``goal``,
  uniform over the three) that the *other* agent should reach, and sees only its colour.
- Actions: a move and a word of a 10-word vocabulary at once: ``move + 5 * word`` of
  Discrete(50), or 15 numbers in ``[0, 1]`` (five for the move as mpe2's continuous moves,
  ten that are the message as given); moves times MPE's acceleration 5. The message is
  what the other agent hears after the step.
- Reward of agent i: ``(1 - local_ratio) * mean_j r_j + local_ratio * r_i`` with ``r_i`` the
  negative distance from the other agent to agent i's goal.
- Observation: own velocity, the landmarks relative to it, its goal's colour and the other
  agent's message (21 numbers); ``state()`` is both observations side by side.
- Every episode is truncated after ``max_cycles`` steps; none terminates.
"""

from typing import Any, Literal

import numpy as np
from pydantic import Field

from relayrl.core.specs import GroupSpec
from relayrl.core.strict import Strict
from relayrl.envs.particle_games import Landmarks, ParticleGames, ParticleSection
from relayrl.envs.particles import ACCEL, mpe_forces
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory

AGENTS = 2
WORDS = 10  # mpe2's world.dim_c for this scenario
MOVES = 5
COLORS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]])  # the landmarks' colours
AGENT_SIZE = 0.05  # mpe2's default; the agents never collide, so it does not act
OTHER = np.array([1, 0])  # each agent's partner


class ReferenceSettings(Strict):
    """mpe2's ``simple_reference_v3`` arguments and defaults."""

    local_ratio: float = Field(0.5, ge=0, le=1, description="weight of the agent's own goal beside the mean over both")
    max_cycles: int = Field(25, ge=1)
    continuous_actions: bool = False


class ReferenceVectorEnv(ParticleGames):
    """E games of simple_reference as arrays; each agent's goal ``[E, 2]`` and the message
    it last sent ``[E, 2, 10]`` beside the bodies."""

    kind = "simple-reference"
    seed_tag = 0x5245

    def __init__(self, num_envs: int, **settings: Any) -> None:
        s = ReferenceSettings(**settings)
        self.s = s
        continuous = s.continuous_actions
        self.obs_size = 2 + 2 * len(COLORS) + 3 + WORDS
        groups = (
            GroupSpec(
                "agent", tuple(f"agent_{i}" for i in range(AGENTS)), (self.obs_size,), np.dtype(np.float32),
                0 if continuous else MOVES * WORDS, action_shape=(MOVES + WORDS,) if continuous else (),
                action_low=(0.0,) * (MOVES + WORDS) if continuous else (), action_high=(1.0,) * (MOVES + WORDS) if continuous else (),
                state_shape=(AGENTS * self.obs_size,),
            ),
        )
        super().__init__(num_envs, groups, np.full(AGENTS, AGENT_SIZE), False, s.max_cycles, s.model_dump(), Landmarks(len(COLORS)))
        self.goals = np.zeros((num_envs, AGENTS), np.int64)
        self.said = np.zeros((num_envs, AGENTS, WORDS))

    def spawn(self, games: np.ndarray) -> None:
        # as mpe2's reset_world: the goals first, then the bodies
        self.goals[games] = self.rng.integers(len(COLORS), size=(len(games), AGENTS))
        self.said[games] = 0.0
        super().spawn(games)

    def observe(self) -> list[np.ndarray]:
        landmarks, _ = self.relative()
        heard = self.said[:, OTHER]
        return [np.concatenate((self.bodies.vel, landmarks, COLORS[self.goals], heard), axis=-1).astype(np.float32)]

    def state(self) -> np.ndarray:
        return self.observe()[0].reshape(self.num_envs, -1)

    def rewards(self) -> np.ndarray:
        goal = np.take_along_axis(self.targets, self.goals[..., None], axis=1)  # [E, 2, 2]: each agent's goal landmark
        own = -np.sqrt(np.square(self.bodies.pos[:, OTHER] - goal).sum(-1))  # [E, 2]: the partner's distance to it
        shared = (own[:, 0] + own[:, 1]) / AGENTS
        r = self.s.local_ratio
        return shared[:, None] * (1 - r) + own * r

    def act(self, actions: list[np.ndarray]) -> np.ndarray:
        """``[E, 2]`` integers ``move + 5 * word`` in ``[0, 50)``, or ``[E, 2, 15]`` numbers
        in ``[0, 1]``; the message is kept for the partner's next observation."""
        (chosen,) = actions
        shape = (self.num_envs, AGENTS)
        if self.s.continuous_actions:
            if chosen.shape != (*shape, MOVES + WORDS):
                raise ValueError(f"simple-reference continuous actions are [E, 2, 15] = {(*shape, MOVES + WORDS)} numbers in [0, 1], got {chosen.shape}")
            force = mpe_forces(self.kind, chosen[..., :MOVES], shape, True)
            self.said = chosen[..., MOVES:].astype(np.float64)
            return force * ACCEL
        if chosen.shape != shape or chosen.min() < 0 or chosen.max() >= MOVES * WORDS:
            raise ValueError(f"simple-reference actions are integers move + 5 * word in [0, 50) of shape {shape}, got shape {chosen.shape}")
        self.said = np.eye(WORDS)[chosen // MOVES]
        return mpe_forces(self.kind, chosen % MOVES, shape, False) * ACCEL

    def game_arrays(self) -> tuple[np.ndarray, ...]:
        return (*super().game_arrays(), self.goals, self.said)

    def load_game_arrays(self, arrays: list[np.ndarray]) -> None:
        *bodies, self.goals, self.said = arrays
        super().load_game_arrays(bodies)


class ReferenceSection(ParticleSection):
    """``simple-reference``: mpe2's simple_reference_v3, E games as arrays."""

    name: Literal["simple-reference"] = "simple-reference"
    settings: ReferenceSettings = ReferenceSettings()

    def group_names(self) -> list[str]:
        return ["agent"]


ENVS.add("simple-reference", EnvEntry(lambda settings: EnvFactory(None, dict(settings), vectorised=ReferenceVectorEnv), ReferenceSection))
