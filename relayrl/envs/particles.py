"""The particle physics of the multi-agent particle environments (MPE; Lowe et al. 2017,
as in PettingZoo's ``mpe2`` package), batched over E worlds in NumPy.

Per step (``mpe2``'s ``World.step``): each agent's force is its action times its
acceleration; every pair of colliding bodies pushes apart with a soft contact force
``contact_force * delta / |delta| * k * log(1 + exp(-(|delta| - r_a - r_b) / k))``
(k the contact margin; a landmark that collides pushes but is not moved); then positions
move by the old velocity times dt, velocities are damped by ``1 - damping``, gain ``force
/ mass * dt`` and are scaled down to the body's maximum speed where it has one. Constants: ``mpe2``'s defaults
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


def contact_forces(pos: np.ndarray, size: np.ndarray, collide: np.ndarray) -> np.ndarray:
    """The summed soft contact force on each body ``[E, M, 2]`` from every other colliding
    body (each pair once, equal and opposite), for bodies at ``pos [E, M, 2]`` of radii
    ``size [M]``; ``collide [M]`` marks the ones that collide."""
    delta = pos[:, :, None, :] - pos[:, None, :, :]  # [E, M, M, 2]: a - b
    dist = np.sqrt(np.square(delta).sum(-1))
    reach = size[:, None] + size[None, :]
    k = CONTACT_MARGIN
    penetration = np.logaddexp(0.0, -(dist - reach) / k) * k
    pairs = collide[:, None] & collide[None, :] & ~np.eye(len(size), dtype=bool)
    # a body against itself, or two at one point (walls can pin them in a corner), has no
    # direction to push: no force, where mpe2 would give nan
    pushed = pairs[None] & (dist > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        force = CONTACT_FORCE * delta / dist[..., None] * penetration[..., None]
    return np.where(pushed[..., None], force, 0.0).sum(2)


def integrate(bodies: Bodies, force: np.ndarray, max_speed: np.ndarray | None = None, velocity_first: bool = False) -> None:
    """One step of every world in place: position by the old velocity, then damping and
    the force (unit mass); a body faster than its ``max_speed [N]`` (where given) is slowed
    to it, direction kept. ``velocity_first``: the velocity first, then the position by the
    new one (PettingZoo's MPE up to 1.22, before ``simple_*_v3``)."""
    if not velocity_first:
        bodies.pos += bodies.vel * DT
    bodies.vel *= 1 - DAMPING
    bodies.vel += force * DT
    if max_speed is not None:
        speed = np.sqrt(np.square(bodies.vel[..., 0]) + np.square(bodies.vel[..., 1]))  # [E, N]
        over = speed > max_speed
        if over.any():
            with np.errstate(invalid="ignore", divide="ignore"):  # speed 0 is never over
                capped = bodies.vel / speed[..., None] * max_speed[:, None]
            bodies.vel = np.where(over[..., None], capped, bodies.vel)
    if velocity_first:
        bodies.pos += bodies.vel * DT


def confine(bodies: Bodies, bound: float) -> None:
    """Keeps every body in ``[-bound, bound]^2`` in place: a position past a wall is put on
    it, and a body on a wall keeps no velocity into it (MPE has no walls; the AI Arena's
    public navigation env clips positions to its square)."""
    np.clip(bodies.pos, -bound, bound, out=bodies.pos)
    into_wall = (np.abs(bodies.pos) >= bound) & (bodies.vel * bodies.pos > 0)
    bodies.vel[into_wall] = 0.0


def action_force(actions: np.ndarray, continuous: bool) -> np.ndarray:
    """The force of each agent's action ``[E, N, 2]``: a continuous action in ``[-1, 1]^2``
    or one of MPE's five discrete moves, times the acceleration."""
    unit = np.clip(actions, -1.0, 1.0).astype(np.float64) if continuous else DISCRETE_MOVES[actions]
    return unit * ACCEL


def mpe_forces(env: str, actions: np.ndarray, shape: tuple[int, int], continuous: bool) -> np.ndarray:
    """mpe2's unit forces ``[E, N, 2]`` from a group's actions ``shape = (E, N)``: one of
    the five moves each, or five numbers in ``[0, 1]`` whose differences ``(a2 - a1, a4 -
    a3)`` are the force (mpe2 does not clip them); the caller scales by the acceleration."""
    if continuous:
        if actions.shape != (*shape, 5):
            raise ValueError(f"{env} continuous actions are [E, N, 5] = {(*shape, 5)} numbers in [0, 1], got {actions.shape}")
        a = actions.astype(np.float64)
        return np.stack((a[..., 2] - a[..., 1], a[..., 4] - a[..., 3]), -1)
    if actions.shape != shape or actions.min() < 0 or actions.max() >= 5:
        raise ValueError(f"{env} actions are integer moves in [0, 5) of shape {shape}, got shape {actions.shape}")
    return DISCRETE_MOVES[actions]
