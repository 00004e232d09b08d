"""``simple-tag``: MPE's predator-prey (Lowe et al. 2017) exactly as PettingZoo's
``mpe2.simple_tag_v3`` steps it, batched over E games in NumPy.

Same settings (``num_good``, ``num_adversaries``, ``num_obstacles``, ``max_cycles``,
``continuous_actions``; mpe2's defaults 1, 3, 2, 25, false); ``tests/envs/test_tag.py``
checks every output against the installed ``mpe2``. From mpe2's ``simple_tag`` scenario:

- Two groups, ``adversary`` (the predators: radius 0.075, acceleration 3, top speed 1.0)
  and ``agent`` (the prey: radius 0.05, acceleration 4, top speed 1.3), adversaries first
  in the agent order. Obstacles of radius 0.2 that agents bounce off and never move;
  agents start uniform in ``[-1, 1]^2``, obstacles in ``[-0.9, 0.9]^2``.
- Actions: mpe2's five moves or five numbers in ``[0, 1]``, times the agent's acceleration.
- Rewards: every adversary gets +10 for each (prey, adversary) pair in contact (centres
  closer than the two radii); a prey gets -10 for each adversary touching it, and is
  penalised for leaving the field: per coordinate ``|x|``, 0 below 0.9, ``10 (|x| - 0.9)``
  below 1, then ``min(exp(2 |x| - 2), 10)``.
- Observations: own velocity, own position, the obstacles and the other agents relative to
  it, and the velocities of the other prey (``4 + 2 L + 2 (N - 1) + 2 G`` numbers for an
  adversary, ``2 (G - 1)`` at the end for a prey); ``state()`` is every agent's observation
  side by side.
- Every episode is truncated after ``max_cycles`` steps; none terminates.
"""

from typing import Any, Literal

import numpy as np
from pydantic import Field

from relayrl.core.strict import Strict
from relayrl.envs.particle_games import Landmarks, ParticleGames, ParticleSection, move_group
from relayrl.envs.particles import mpe_forces
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory

# mpe2's simple_tag make_world: (radius, acceleration, top speed) of each side
ADVERSARY = (0.075, 3.0, 1.0)
PREY = (0.05, 4.0, 1.3)
OBSTACLE_SIZE = 0.2
OBSTACLE_SPREAD = 0.9
CONTACT_REWARD = 10.0


class TagSettings(Strict):
    """mpe2's ``simple_tag_v3`` arguments and defaults."""

    num_good: int = Field(1, ge=1, description="prey (the 'agent' group)")
    num_adversaries: int = Field(3, ge=1, description="predators (the 'adversary' group)")
    num_obstacles: int = Field(2, ge=0)
    max_cycles: int = Field(25, ge=1)
    continuous_actions: bool = False


def out_of_bounds(x: np.ndarray) -> np.ndarray:
    """mpe2's penalty for a prey's coordinate ``|x|``: 0 below 0.9, linear to 1, then
    ``exp(2x - 2)`` up to 10 (the exponent capped so far-off prey do not overflow)."""
    return np.where(x < 0.9, 0.0, np.where(x < 1.0, (x - 0.9) * 10, np.minimum(np.exp(np.minimum(2 * x - 2, 10.0)), 10.0)))


class TagVectorEnv(ParticleGames):
    """E games of simple_tag as arrays."""

    kind = "simple-tag"
    seed_tag = 0x5441

    def __init__(self, num_envs: int, **settings: Any) -> None:
        s = TagSettings(**settings)
        self.s = s
        a, g, n = s.num_adversaries, s.num_good, s.num_adversaries + s.num_good
        self.hunters = a
        own = 4 + 2 * s.num_obstacles + 2 * (n - 1)
        sizes = {"adversary": own + 2 * g, "agent": own + 2 * (g - 1)}
        state = a * sizes["adversary"] + g * sizes["agent"]
        groups = tuple(
            move_group(name, tuple(f"{name}_{i}" for i in range(count)), sizes[name], state, s.continuous_actions)
            for name, count in (("adversary", a), ("agent", g))
        )
        side = np.array([ADVERSARY] * a + [PREY] * g)  # [N, (radius, acceleration, top speed)]
        self.accel = side[:, 1]
        landmarks = Landmarks(s.num_obstacles, OBSTACLE_SPREAD, OBSTACLE_SIZE)
        super().__init__(num_envs, groups, side[:, 0], True, s.max_cycles, s.model_dump(), landmarks, max_speed=side[:, 2])
        # the prey each agent sees the velocity of: every prey (adversaries), the other prey (prey)
        prey = np.arange(a, n)
        self.seen_prey = [np.broadcast_to(prey, (a, g)), np.array([[p for p in prey if p != q] for q in prey], np.int64).reshape(g, g - 1)]

    def observe(self) -> list[np.ndarray]:
        landmarks, others = self.relative()
        vel, pos, e = self.bodies.vel, self.bodies.pos, self.num_envs
        parts = []
        for rows, seen in zip((slice(0, self.hunters), slice(self.hunters, self.N)), self.seen_prey):
            velocities = vel[:, seen, :].reshape(e, len(seen), -1)
            parts.append(np.concatenate((vel[:, rows], pos[:, rows], landmarks[:, rows], others[:, rows], velocities), axis=-1).astype(np.float32))
        return parts

    def state(self) -> np.ndarray:
        return np.concatenate([obs.reshape(self.num_envs, -1) for obs in self.observe()], axis=1)

    def contacts(self) -> np.ndarray:
        """``[E, adversary, prey]``: the pairs in contact."""
        pos, size, a = self.bodies.pos, self.bodies.size, self.hunters
        gap = np.sqrt(np.square(pos[:, :a, None, :] - pos[:, None, a:, :]).sum(-1))
        return gap < size[:a, None] + size[None, a:]

    def rewards(self) -> np.ndarray:
        touching = self.contacts()
        hunters = np.broadcast_to((CONTACT_REWARD * touching.sum((1, 2)))[:, None], (self.num_envs, self.hunters))
        edge = out_of_bounds(np.abs(self.bodies.pos[:, self.hunters :]))
        prey = -CONTACT_REWARD * touching.sum(1) - edge[..., 0] - edge[..., 1]
        return np.concatenate([hunters, prey], axis=1)

    def act(self, actions: list[np.ndarray]) -> np.ndarray:
        """Per group, ``[E, n]`` moves or ``[E, n, 5]`` numbers in ``[0, 1]``."""
        if len(actions) != 2:
            raise ValueError(f"simple-tag takes the actions of its two groups (adversary, agent), got {len(actions)}")
        e, continuous = self.num_envs, self.s.continuous_actions
        unit = np.concatenate([mpe_forces(self.kind, chosen, (e, spec.n_agents), continuous) for chosen, spec in zip(actions, self.groups)], axis=1)
        return unit * self.accel[:, None]


class TagSection(ParticleSection):
    """``simple-tag``: mpe2's simple_tag_v3, E games as arrays."""

    name: Literal["simple-tag"] = "simple-tag"
    settings: TagSettings = TagSettings()

    def group_names(self) -> list[str]:
        return ["adversary", "agent"]


ENVS.add("simple-tag", EnvEntry(lambda settings: EnvFactory(None, dict(settings), vectorised=TagVectorEnv), TagSection))
