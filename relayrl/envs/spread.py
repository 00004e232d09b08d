"""``simple-spread``: MPE's simple_spread (Lowe et al. 2017) exactly as PettingZoo's
``mpe2.simple_spread_v3`` steps it, batched over E games in NumPy.

Same settings (``N``, ``local_ratio``, ``max_cycles``, ``continuous_actions``, with mpe2's
defaults 3, 0.5, 25 and false), so a config switches between the two by ``env.name``
alone; ``tests/envs/test_spread.py`` checks observations, rewards and truncations against
the installed ``mpe2`` output by output. From mpe2's ``simple_spread`` scenario and
``SimpleEnv``:

- N agents (radius 0.15, colliding, silent) and N landmarks; starts uniform in ``[-1, 1]^2``.
- Actions: five moves (no-op, -x, +x, -y, +y), or five numbers in ``[0, 1]`` whose
  differences ``(a2 - a1, a4 - a3)`` are the force (mpe2 does not clip them); times MPE's
  sensitivity 5.
- Reward of agent i: ``(1 - local_ratio) * global + local_ratio * local_i`` with
  ``global = -sum over landmarks of the nearest agent's distance`` and ``local_i = -1`` for
  every other agent closer than the two radii (0.3).
- Observation: own velocity, own position, the landmarks and the other agents relative to
  it, and the other agents' (silent, so zero) communication, ``2 + 2 + 2N + 2(N-1) +
  2(N-1)`` numbers; ``state()`` is the agents' observations side by side, as mpe2's.
- Every episode is truncated after ``max_cycles`` steps; none terminates.

``release: pettingzoo-1.22.2`` steps ``simple_spread_v2`` as PettingZoo 1.22.2 did, the
release HARL's published MPE results ran: the velocity is updated before the position
(``_mpe_utils/core.py``, ``integrate_state``; mpe2 moves the position first), a
continuous action's force is ``(a1 - a2, a3 - a4)``, and every agent counts itself among
the agents it collides with (``simple_spread.py``, ``reward``: -1 per step in ``local_i``,
-0.5 x 3 x 25 = -37.5 on a team's 25-step return at ``local_ratio`` 0.5; fixed in 1.22.4).
"""

from typing import Any, Literal

import numpy as np
from pydantic import Field

from relayrl.core.strict import Strict
from relayrl.envs.particle_games import Landmarks, ParticleGames, ParticleSection, move_group
from relayrl.envs.particles import ACCEL, mpe_forces
from relayrl.envs.registry import ENVS, EnvEntry, EnvFactory

AGENT_SIZE = 0.15  # mpe2's simple_spread make_world
PETTINGZOO_1_22 = "pettingzoo-1.22.2"  # the release setting of HARL's MPE step (module docstring)
COMM = 2  # mpe2's world.dim_c: each other agent's communication in the observation


class SpreadSettings(Strict):
    """mpe2's ``simple_spread_v3`` arguments and defaults."""

    N: int = Field(3, ge=2, description="agents, and as many landmarks")
    local_ratio: float = Field(0.5, ge=0, le=1, description="weight of the agent's own collision penalty beside the shared distance term")
    max_cycles: int = Field(25, ge=1)
    continuous_actions: bool = False
    release: Literal["mpe2", "pettingzoo-1.22.2"] = Field(
        "mpe2", description="whose step: mpe2's simple_spread_v3, or PettingZoo 1.22.2's simple_spread_v2 (HARL's published MPE runs)"
    )


class SpreadVectorEnv(ParticleGames):
    """E games of simple_spread as arrays."""

    kind = "simple-spread"
    seed_tag = 0x5350

    def __init__(self, num_envs: int, **settings: Any) -> None:
        s = SpreadSettings(**settings)
        self.s = s
        self.velocity_first = s.release == PETTINGZOO_1_22
        n = s.N
        self.obs_size = 4 + 2 * n + (2 + COMM) * (n - 1)
        groups = (move_group("agent", tuple(f"agent_{i}" for i in range(n)), self.obs_size, n * self.obs_size, s.continuous_actions),)
        super().__init__(num_envs, groups, np.full(n, AGENT_SIZE), True, s.max_cycles, s.model_dump(), Landmarks(n))

    def observe(self) -> list[np.ndarray]:
        landmarks, others = self.relative()
        silent = np.zeros((self.num_envs, self.N, COMM * (self.N - 1)))
        return [np.concatenate((self.bodies.vel, self.bodies.pos, landmarks, others, silent), axis=-1).astype(np.float32)]

    def state(self) -> np.ndarray:
        return self.observe()[0].reshape(self.num_envs, -1)

    def rewards(self) -> np.ndarray:
        shared = -self.distances().min(1).sum(1)  # [E]: each landmark's nearest agent
        pos = self.bodies.pos
        gap = np.sqrt(np.square(pos[:, :, None, :] - pos[:, None, :, :]).sum(-1))  # [E, N, N]
        touching = gap < 2 * AGENT_SIZE
        collisions = touching.sum(2) - (0 if self.s.release == PETTINGZOO_1_22 else np.diagonal(touching, axis1=1, axis2=2))  # 1.22.2 counts itself
        r = self.s.local_ratio
        return shared[:, None] * (1 - r) - collisions * r

    def act(self, actions: list[np.ndarray]) -> np.ndarray:
        """``[E, N]`` moves, or ``[E, N, 5]`` numbers in ``[0, 1]``."""
        force = mpe_forces(self.kind, actions[0], (self.num_envs, self.N), self.s.continuous_actions) * ACCEL
        return -force if self.s.release == PETTINGZOO_1_22 and self.s.continuous_actions else force  # 1.22.2's (a1 - a2, a3 - a4)


class SpreadSection(ParticleSection):
    """``simple-spread``: mpe2's simple_spread_v3, E games as arrays."""

    name: Literal["simple-spread"] = "simple-spread"
    settings: SpreadSettings = SpreadSettings()

    def group_names(self) -> list[str]:
        return ["agent"]


ENVS.add("simple-spread", EnvEntry(lambda settings: EnvFactory(None, dict(settings), vectorised=SpreadVectorEnv), SpreadSection))
