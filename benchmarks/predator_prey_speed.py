"""Vectorised Predator-Prey against the plain per-game implementation of the tests
(tests/predator_prey_reference.py), in one run: env steps/s (one step of one game) at E
games, both stepping the same actions and random draws, observations, state and masks
included.

The two are timed in alternation, ``--repeats`` pairs: the vectorised env steps all E
games through the trajectory, the per-game one steps ``--reference-games`` of them (its
cost per game-step does not depend on how many games there are). Each pair gives a ratio
of steps/s; the median ratio is reported, so that load that comes and goes on a shared
machine slows both sides of a pair alike.

    python benchmarks/predator_prey_speed.py [--games 64] [--steps 200] [--repeats 15] [--reference-games 8]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from predator_prey_reference import ReferenceGame  # noqa: E402

from relayrl.envs.predator_prey import Draws, PredatorPreyVectorEnv  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--reference-games", type=int, default=8)
    args = parser.parse_args()
    e, steps, g_ref = args.games, args.steps, min(args.reference_games, args.games)
    env = PredatorPreyVectorEnv(e)
    (first,) = env.reset(0)
    rng = np.random.default_rng(1)
    draws, respawns = [], []
    actions = []
    # the vectorised env's own trajectory fixes the actions and draws both implementations step
    mask = first.action_mask
    start_cells = np.concatenate([env.predators, env.prey], axis=1)
    for _ in range(steps):
        a = np.where(mask, rng.random(mask.shape), -1.0).argmax(-1)
        d = Draws.sample(rng, e, env.N, env.M)
        r = env.spawn_cells(e)
        (step,), _ = env.step_with_draws(a, d, r)
        actions.append(a), draws.append(d), respawns.append(r)
        mask = step.action_mask

    def vectorised() -> float:
        env.reset(0)
        start = time.perf_counter()
        for a, d, r in zip(actions, draws, respawns):
            env.step_with_draws(a, d, r)
        return e * steps / (time.perf_counter() - start)

    def per_game() -> float:
        games = [ReferenceGame(env.s) for _ in range(g_ref)]
        for g, game in enumerate(games):
            game.spawn(start_cells[g])
        start = time.perf_counter()
        for a, d, r in zip(actions, draws, respawns):
            for g, game in enumerate(games):
                _, terminated, truncated = game.step(a[g], d.predator_order[g], d.prey_order[g], d.rest[g], d.move[g])
                [game.observation(i) for i in range(env.N)], game.state(), [game.mask(i) for i in range(env.N)]
                if terminated or truncated:
                    game.spawn(r[g])
        return g_ref * steps / (time.perf_counter() - start)

    pairs = [(vectorised(), per_game()) for _ in range(args.repeats)]
    ratios = sorted(v / ref for v, ref in pairs)
    v, ref = np.median([p[0] for p in pairs]), np.median([p[1] for p in pairs])
    print(f"Predator-Prey (SPEC §1.3 defaults), E = {e} games, {steps} steps, observations, state and masks included; "
          f"{args.repeats} pairs, the per-game side stepping {g_ref} of the games; medians:")
    print(f"| implementation | env steps/s |\n|---|---:|\n| per-game (tests/predator_prey_reference.py) | {ref:,.0f} |")
    print(f"| vectorised (relayrl.envs.predator_prey) | {v:,.0f} |\n")
    print(f"vectorised / per-game: {ratios[len(ratios) // 2]:.1f}x (median of the pairs; range {ratios[0]:.1f}x-{ratios[-1]:.1f}x)")


if __name__ == "__main__":
    main()
