"""Where a trained cooperative-navigation team's agents go when they act greedily.

    python docs/results/centralised/greedy_navigation.py RUN_DIR [--games 16] [--seed 123]

Loads the run's latest checkpoint (without taking the run's lock, so a run in training may
be read), plays one episode in each of ``--games`` games and prints, at a few steps, how
many targets are occupied and each agent's distance to its nearest target, then how many
distinct targets the agents end nearest to. The README's "What holds MASAC back" uses it.
"""

import argparse
from pathlib import Path

import numpy as np
import yaml

from relayrl.arena.rollout import Rollout
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.envs.navigation import NavigationVectorEnv
from relayrl.experiment import build_config, build_run
from relayrl.experiment.checkpoint import list_checkpoints, load_policies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    config = build_config(yaml.safe_load((args.run_dir / "config.yaml").read_text()))
    checkpoint = list_checkpoints(args.run_dir / "checkpoints")[-1]
    run = build_run(config, None, verbose=False)
    saved = load_policies(checkpoint)
    for pid, policy in run.policies.items():
        policy.load_policy_state(saved[pid], str(checkpoint))
    venv = make_vector_env(make_env_factory(config.env.name, config.env.settings.model_dump()), args.games)
    assert isinstance(venv, NavigationVectorEnv), f"{config.env.name} is not cooperative-navigation"
    rollout = Rollout(venv, run.policies, run.evaluator.venue.matches)
    rollout.reset(args.seed)
    print(f"{checkpoint.name}, {args.games} games, greedy")
    nearest = np.zeros((venv.num_envs, venv.N), np.int64)
    for t in range(1, venv.max_cycles):  # the step at max_cycles starts new games
        rollout.step(None)
        distances = venv.distances()  # [E, agent, target]
        nearest = distances.argmin(-1)
        if t in (1, 10, 25, 50, 100, 200, venv.max_cycles - 1):
            per_agent = distances.min(-1).mean(0).round(2)
            print(f"step {t:3d}: targets occupied {venv.occupied().sum(1).mean():.2f}, distance to the nearest target {per_agent} (per agent)")
    distinct = np.mean([len(set(row)) for row in nearest])
    print(f"distinct targets the agents end nearest to: {distinct:.2f} of {venv.N}")
    run.close()


if __name__ == "__main__":
    main()
