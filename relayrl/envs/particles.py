"""The particle physics of the multi-agent particle environments (MPE; Lowe et al. 2017,
as in PettingZoo's ``mpe2`` package), batched over E worlds in NumPy.

Per step (``mpe2``'s ``World.step``): each agent's force is its action times its
acceleration; every pair of colliding bodies pushes apart with a soft contact force
``contact_force * delta / |delta| * k * log(1 + exp(-(|delta| - r_a - r_b) / k))``
(k the contact margin); then positions move by the old velocity times dt, velocities are
damped by ``1 - damping`` and gain ``force / mass * dt``. Constants: ``mpe2``'s defaults
(dt 0.1, damping 0.25, contact force 100, contact margin 1e-3, mass 1, acceleration 5,
the ``sensitivity`` of its action handling).
"""

from dataclasses import dataclass

import numpy as np

DT = 0.1
DAMPING = 0.25
CONTACT_FORCE = 100.0
CONTACT_MARGIN = 1e-3
ACCEL = 5.0

# MPE's discrete moves: no-op, -x, +x, -y, +y (unit forces before the acceleration)
DISCRETE_MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], np.float64)


@dataclass
class Bodies:
    """Movable bodies of E worlds: positions and velocities ``[E, N, 2]``, radii ``[N]``
    and which of them collide ``[N]``."""

    pos: np.ndarray
    vel: np.ndarray
    size: np.ndarray
    collide: np.ndarray


def contact_forces(bodies: Bodies) -> np.ndarray:
    """The summed soft contact force on each body ``[E, N, 2]`` from every other colliding
    body (each pair once, equal and opposite)."""
    delta = bodies.pos[:, :, None, :] - bodies.pos[:, None, :, :]  # [E, N, N, 2]: a - b
    dist = np.sqrt(np.square(delta).sum(-1))
    reach = bodies.size[:, None] + bodies.size[None, :]
    k = CONTACT_MARGIN
    penetration = np.logaddexp(0.0, -(dist - reach) / k) * k
    pairs = bodies.collide[:, None] & bodies.collide[None, :] & ~np.eye(len(bodies.size), dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):  # a body against itself: masked out
        force = CONTACT_FORCE * delta / dist[..., None] * penetration[..., None]
    return np.where(pairs[None, :, :, None], force, 0.0).sum(2)


def integrate(bodies: Bodies, force: np.ndarray) -> None:
    """One step of every world in place: position by the old velocity, then damping and
    the force (unit mass)."""
    bodies.pos += bodies.vel * DT
    bodies.vel *= 1 - DAMPING
    bodies.vel += force * DT


def action_force(actions: np.ndarray, continuous: bool) -> np.ndarray:
    """The force of each agent's action ``[E, N, 2]``: a continuous action in ``[-1, 1]^2``
    or one of MPE's five discrete moves, times the acceleration."""
    unit = np.clip(actions, -1.0, 1.0).astype(np.float64) if continuous else DISCRETE_MOVES[actions]
    return unit * ACCEL
