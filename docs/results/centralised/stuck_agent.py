"""What a navigation MASAC team with two agents on targets knows about the third target.

    python docs/results/centralised/stuck_agent.py RUN_DIR [--games 64] [--seed 123] [--at 200] [--after 100]

Loads the learner of the run's latest checkpoint (its actors and critics, without the run's lock), plays ``--games`` games greedily for
``--at`` steps, and in the games where exactly two targets are occupied moves the agent
that is on none onto the free target, at rest. It then compares, for these games, the
moved state with the state as played:

- the common critic's value of each, ``min(Q1, Q2)`` at the greedy joint action;
- the targets occupied over the next ``--after`` greedy steps, and whether the moved
  agent is still on its target at the end.

A critic that values the moved state above the played one and an actor that keeps the
agent there mean the team has the skill but does not find it (exploration); an actor
that walks off the target means the third agent's actor has not learnt to hold it.
"""

import argparse
from pathlib import Path

import numpy as np
import torch
import yaml

from relayrl.algos.masac import LOG_STD_MAX, LOG_STD_MIN
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.envs.navigation import NavigationVectorEnv
from relayrl.experiment import build_config, build_run
from relayrl.experiment.checkpoint import list_checkpoints, load_learner


def greedy(algorithm, venv: NavigationVectorEnv) -> np.ndarray:
    """The team's greedy forces ``[E, N, 2]`` for the games' current observations."""
    (obs,) = venv.observe()
    actions, _ = algorithm.act(obs.transpose(1, 0, 2), None, explore=0.0)
    return actions.transpose(1, 0, 2)


@torch.inference_mode()
def value(algorithm, venv: NavigationVectorEnv) -> np.ndarray:
    """The common critic's ``min(Q1, Q2)`` ``[E]`` at the greedy joint action."""
    (obs,) = venv.observe()
    actions = torch.as_tensor(greedy(algorithm, venv))  # [E, N, A]
    x = algorithm.critic_input(torch.as_tensor(obs), algorithm.joint(actions.transpose(0, 1)))
    return algorithm.q(algorithm.critics, x).min(0).values[0].numpy()


@torch.inference_mode()
def spread(algorithm, venv: NavigationVectorEnv) -> np.ndarray:
    """Each agent's policy standard deviation before the squash, averaged over the two
    force components ``[E, N]`` (how widely it explores)."""
    (obs,) = venv.observe()
    out = algorithm.actor(torch.as_tensor(obs.transpose(1, 0, 2)))  # [N, E, 2A]
    log_std = out.chunk(2, dim=-1)[1].clamp(LOG_STD_MIN, LOG_STD_MAX)
    return log_std.exp().mean(-1).T.numpy()


def play(algorithm, venv: NavigationVectorEnv, steps: int) -> np.ndarray:
    """Targets occupied ``[steps, E]`` over ``steps`` greedy steps (no game is restarted)."""
    occupied = []
    for _ in range(steps):
        venv.advance(venv.act([greedy(algorithm, venv)]))
        occupied.append(venv.occupied().sum(1))
    return np.stack(occupied)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--at", type=int, default=200, help="greedy steps before the agent is moved")
    parser.add_argument("--after", type=int, default=100, help="greedy steps after it")
    args = parser.parse_args()
    config = build_config(yaml.safe_load((args.run_dir / "config.yaml").read_text()))
    if config.centralised is None or config.centralised.critic != "common":
        raise SystemExit(f"{args.run_dir} is not a MASAC run with a common critic (centralised.critic: common)")
    if args.at + args.after > config.env.settings.max_cycles:
        raise SystemExit(f"--at + --after must not pass the game's {config.env.settings.max_cycles} steps")
    checkpoint = list_checkpoints(args.run_dir / "checkpoints")[-1]
    run = build_run(config, None, verbose=False)
    algorithm = run.policies["agent"].learner.algorithm
    algorithm.load_state_dict(load_learner(checkpoint, "agent"))  # actors and critics
    venv = make_vector_env(make_env_factory(config.env.name, config.env.settings.model_dump()), args.games)
    assert isinstance(venv, NavigationVectorEnv), f"{config.env.name} is not cooperative-navigation"
    venv.reset(args.seed)
    play(algorithm, venv, args.at)
    distances = venv.distances()  # [E, agent, target]
    occupied = venv.occupied()
    two = np.flatnonzero(occupied.sum(1) == 2)
    print(f"{checkpoint.name}: after {args.at} greedy steps, targets occupied {occupied.sum(1).mean():.2f} of {venv.N}; "
          f"{len(two)} of {args.games} games have exactly two")
    if len(two) == 0:
        return
    idle = distances[two].min(2).argmax(1)  # the agent on no target
    free = (~occupied[two]).argmax(1)  # the target no agent is on
    played = [a.copy() for a in venv.game_arrays()]
    moved = [a.copy() for a in played]
    moved[0][two, idle] = venv.targets[two, free]
    moved[1][two, idle] = 0.0
    rows = np.arange(len(two))
    std = spread(algorithm, venv)[two]
    others = std.sum(1) - std[rows, idle]
    print(f"policy standard deviation (before tanh): the idle agent {std[rows, idle].mean():.3f}, the two on targets {others.mean() / 2:.3f}")
    for name, arrays in (("as played", played), ("third agent moved onto the free target", moved)):
        venv.load_game_arrays([a.copy() for a in arrays])
        q = value(algorithm, venv)[two]
        counts = play(algorithm, venv, args.after)[:, two]
        kept = venv.distances()[two][rows, idle, free] < venv.s.occupied_radius
        print(f"{name}: critic value {q.mean():.1f} (games {q.min():.1f} to {q.max():.1f}); "
              f"targets occupied over the next {args.after} steps {counts.mean():.2f}, at the end {counts[-1].mean():.2f}; "
              f"the idle agent on the free target at the end in {kept.mean():.0%} of games")
    run.close()


if __name__ == "__main__":
    main()
