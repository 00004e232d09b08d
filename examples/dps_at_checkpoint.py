"""What the DPS weight sees in a trained DASE team: how far the agents' policies are apart,
how often they sit on the action bounds, and the weight one agent gives the other's data.

Run: python examples/dps_at_checkpoint.py RUNS/halfcheetah-dase-td3-<hash>/1 [--states 2000]

Agent 0 rolls out its greedy policy in a fresh copy of the task. On those states the
script compares four cases. In every case the collected actions are a policy's actions
plus the training exploration noise, clipped to the bounds:
- the other agent's actions against agent 0's (what training sees);
- agent 0's own noisy actions against itself (identical policies);
- and the same two with the reference covariance sigma^2 I.
"""

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import yaml

from relayrl.algos.actor_critic import DeterministicActor
from relayrl.experiment.checkpoint import list_checkpoints, load_policies
from relayrl.sharing.corrections import dps_weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a DASE run directory (<preset>-<hash>/<seed>) with checkpoints")
    parser.add_argument("--states", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=50, help="batches of 128 external rows per case")
    args = parser.parse_args()

    if not (args.run / "config.yaml").is_file():
        raise SystemExit(f"no config.yaml in {args.run}: pass one seed's run directory, <preset>-<hash>/<seed>")
    config = yaml.safe_load((args.run / "config.yaml").read_text())
    checkpoints = list_checkpoints(args.run / "checkpoints")
    if not checkpoints:
        raise SystemExit(f"no checkpoints under {args.run / 'checkpoints'}: pass a run directory that has trained")
    checkpoint = checkpoints[-1]
    settings, sharing = config["actor_critic"], config["sharing"]
    env = gym.make(config["env"]["settings"]["env_id"])
    learner = DeterministicActor(
        config["env"]["settings"]["n_agents"], env.observation_space.shape[0], env.action_space.low, env.action_space.high,
        settings["hidden"], settings["exploration_noise"], torch.device("cpu"), seed=0, normalize_obs=settings.get("normalize_obs", False),
    )
    learner.load_policy_state(load_policies(checkpoint)["agent"]["networks"])

    obs, _ = env.reset(seed=12345)
    states = []
    for _ in range(args.states):
        states.append(obs)
        action = learner.act(np.tile(obs, (learner.n_sets, 1, 1)), None, 0.0)[0][0, 0]
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
    batch = np.tile(np.array(states, dtype=np.float32), (learner.n_sets, 1, 1))
    with torch.no_grad():
        actions = learner.policy(learner.normalized(torch.as_tensor(batch)))  # [P, S, n]; every agent on agent 0's states
    units = (actions - learner.center) / learner.scale  # DPS works in units of the half-range
    saturated = (units.abs() > 0.99).float().mean(dim=(1, 2))
    sigma = settings["exploration_noise"]
    generator = torch.Generator().manual_seed(0)

    def weight(collector: int, reference_cov: str) -> float:
        draws = []
        for _ in range(args.draws):
            rows = torch.randint(0, len(states), (128,), generator=generator)
            noise = sigma * torch.randn(128, learner.action_dim, generator=generator)
            collected = (units[collector, rows] + noise).clamp(-1.0, 1.0)
            mask = torch.ones(1, 128, dtype=torch.bool)
            draws.append(dps_weight(collected[None], units[0, rows][None], mask, sigma, sharing["divergence"], reference_cov).item())
        return float(np.median(draws))

    print(f"{args.run} at {checkpoint.name}, divergence {sharing['divergence']}, sigma {sigma}")
    print("share of action dimensions at the bounds (|a| > 0.99): " + ", ".join(f"agent {k} {s:.2f}" for k, s in enumerate(saturated)))
    print(f"mean |pi_1(s) - pi_0(s)| per dimension, in half-ranges: {(units[1] - units[0]).abs().mean():.3f}")
    for reference_cov in ("sigma", "std_squared"):
        print(f"reference {reference_cov:>11}: weight agent 0 gives agent 1's rows {weight(1, reference_cov):.2e}; "
              f"gives rows of its own policy {weight(0, reference_cov):.2e}")


if __name__ == "__main__":
    main()
