"""Vectorised Predator-Prey against the plain per-game implementation of the tests
(tests/predator_prey_reference.py), in one run: env steps/s (one step of one game) at E
games, both stepping the same actions and random draws.

    python benchmarks/predator_prey_speed.py [--games 64] [--steps 200]
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
    args = parser.parse_args()
    e, steps = args.games, args.steps
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
    env.reset(0)
    start = time.perf_counter()
    for a, d, r in zip(actions, draws, respawns):
        env.step_with_draws(a, d, r)
    vector_s = time.perf_counter() - start
    games = [ReferenceGame(env.s) for _ in range(e)]
    for g, game in enumerate(games):
        game.spawn(start_cells[g])
    start = time.perf_counter()
    for a, d, r in zip(actions, draws, respawns):
        for g, game in enumerate(games):
            _, terminated, truncated = game.step(a[g], d.predator_order[g], d.prey_order[g], d.rest[g], d.move[g])
            [game.observation(i) for i in range(env.N)], game.state(), [game.mask(i) for i in range(env.N)]
            if terminated or truncated:
                game.spawn(r[g])
    reference_s = time.perf_counter() - start
    v, ref = e * steps / vector_s, e * steps / reference_s
    print(f"Predator-Prey (SPEC §1.3 defaults), E = {e} games, {steps} steps, observations, state and masks included:")
    print(f"| implementation | env steps/s |\n|---|---:|\n| per-game (tests/predator_prey_reference.py) | {ref:,.0f} |")
    print(f"| vectorised (relayrl.envs.predator_prey) | {v:,.0f} |\n\nvectorised / per-game: {v / ref:.1f}x")


if __name__ == "__main__":
    main()
