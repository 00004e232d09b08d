"""A scripted team on continuous ``simple-spread`` under mpe2's step and under PettingZoo
1.22.2's (``release``): how much easier the older physics make the task, apart from its
reward's self-collision term.

    python docs/results/centralised/scripted_spread.py [--games 512]

Before each game every agent is given one landmark (the assignment of least total
distance), and pushes toward it with ``clip(kp (landmark - position) - kd velocity)``
as a continuous action (the force's positive and negative parts on their action entries).
For each release and each pair of gains on a grid, prints the mean team return (the sum
over agents and 25 steps) over the same games, with PettingZoo 1.22.2's constant
self-collision term (-37.5 a game) taken out, and the best gains of each release.
"""

import argparse
import itertools

import numpy as np

from relayrl.envs.spread import SpreadVectorEnv

N, CYCLES = 3, 25
SELF_COLLISION = 0.5 * N * CYCLES  # local_ratio x agents x steps: 1.22.2 counts each agent colliding with itself
GAINS = [(kp, kd) for kp in (5, 10, 20) for kd in (0.5, 1, 2, 3)]


def team_return(release: str, kp: float, kd: float, games: int) -> float:
    env = SpreadVectorEnv(games, N=N, continuous_actions=True, max_cycles=CYCLES, release=release)
    env.reset(0)  # the same starts for every release and gain (the env's own seeded draw)
    distance = np.linalg.norm(env.bodies.pos[:, :, None] - env.targets[:, None], axis=-1)  # [E, agent, landmark]
    orders = np.array(list(itertools.permutations(range(N))))
    best = orders[np.argmin(distance[:, np.arange(N), orders].sum(-1), axis=1)]  # [E, N]: each agent's landmark
    goal = np.take_along_axis(env.targets, best[..., None], axis=1)
    sign = -1.0 if release == "pettingzoo-1.22.2" else 1.0  # its force is (a1 - a2, a3 - a4), mpe2's (a2 - a1, a4 - a3)
    total = np.zeros(games)
    for _ in range(CYCLES):
        force = sign * (kp * (goal - env.bodies.pos) - kd * env.bodies.vel)
        action = np.zeros((games, N, 5), np.float32)
        action[..., 2], action[..., 1] = np.maximum(force[..., 0], 0), np.maximum(-force[..., 0], 0)
        action[..., 4], action[..., 3] = np.maximum(force[..., 1], 0), np.maximum(-force[..., 1], 0)
        steps, _ = env.step([np.clip(action, 0, 1)])
        total += steps[0].reward.sum(1)
    return float(total.mean()) + (SELF_COLLISION if release == "pettingzoo-1.22.2" else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=512)
    args = parser.parse_args()
    for release in ("mpe2", "pettingzoo-1.22.2"):
        scores = {gains: team_return(release, *gains, args.games) for gains in GAINS}
        best = max(scores, key=scores.__getitem__)
        grid = ", ".join(f"kp {kp:g} kd {kd:g}: {v:.1f}" for (kp, kd), v in scores.items())
        print(f"{release}: best kp {best[0]:g}, kd {best[1]:g}: {scores[best]:.2f} ({grid})")


if __name__ == "__main__":
    main()
