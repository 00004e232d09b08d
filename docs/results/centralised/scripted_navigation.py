"""What a scripted team scores on the cooperative navigation (MPE's physics), against the
paper's bar of 800 of 900: before each game the team splits the targets among its agents
(the assignment of least total distance, of the least longest distance, or agent i to
target i whatever the distances: a rule each agent could follow alone), then each
agent pushes toward its own target with a force ``clip(kp (target - position) - kd
velocity, -1, 1)``; agents still collide. A ceiling for what a learnt policy can reach under
these physics, not a learner.

    python docs/results/centralised/scripted_navigation.py [--games 256] [--seed 0] [--walls]
"""

import argparse
import itertools

import numpy as np

from relayrl.envs.navigation import NavigationVectorEnv


def assignment(positions: np.ndarray, targets: np.ndarray, rule: str) -> np.ndarray:
    """``[E, N, 2]`` agents and targets -> each agent's target ``[E, N]``: over the N!
    assignments (N = 3: six), by total or longest distance; or by index."""
    if rule == "index":
        return np.broadcast_to(np.arange(positions.shape[1]), positions.shape[:2])
    perms = np.array(list(itertools.permutations(range(positions.shape[1]))))  # [P, N]
    reach = np.linalg.norm(positions[:, None, :, :] - targets[:, perms, :], axis=-1)  # [E, P, N]
    cost = reach.sum(-1) if rule == "total" else reach.max(-1)
    return perms[cost.argmin(1)]


def play(games: int, seed: int, kp: float, kd: float, rule: str, walls: bool) -> float:
    """The team's mean return over one episode of each of ``games`` games."""
    env = NavigationVectorEnv(games, walls=walls)
    env.reset(seed)
    mine = assignment(env.bodies.pos, env.targets, rule)
    rows = np.arange(games)[:, None]
    total = np.zeros(games)
    for _ in range(env.s.max_cycles):
        goal = env.targets[rows, mine]
        force = np.clip(kp * (goal - env.bodies.pos) - kd * env.bodies.vel, -1.0, 1.0)
        steps, _ = env.step([force.astype(np.float32)])
        total += steps[0].reward.sum(1)
    return float(total.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--walls", action="store_true")
    args = parser.parse_args()
    print(f"{args.games} games from seed {args.seed}, walls {args.walls}: the team's mean return (at most 900)")
    print("| assignment | kp | kd | return |")
    print("|---|---:|---:|---:|")
    for rule in ("total", "longest", "index"):
        for kp, kd in itertools.product((2.0, 5.0, 10.0), (1.0, 2.0)):
            print(f"| {rule} | {kp:g} | {kd:g} | {play(args.games, args.seed, kp, kd, rule, args.walls):.1f} |", flush=True)


if __name__ == "__main__":
    main()
