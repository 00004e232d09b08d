"""SUPER must make interchangeable agents learn faster when reward is rare.

Corridor (relayrl.envs.corridor): 8 runners, each alone in a corridor of 12 cells with
the only reward at the far end and 18 steps per episode, so a random walk rarely gets
there. Independent learners each wait for their own lucky episode; with SUPER a lucky
transition (high |td|) is relayed to everyone. Statistic: the fraction of runners whose
greedy policy reaches the end, averaged over the evaluations of a run (area under the
learning curve), then over seeds; SUPER must beat independent learners by a margin and
on most seeds.
"""

import numpy as np

from relayrl.experiment import build_run, build_config

SEEDS = range(4)
STEPS = 4000
N_AGENTS = 8


def _learning_curve(select: str, seed: int) -> np.ndarray:
    config = build_config(
        {
            "preset": "corridor-learning",
            "seed": seed,
            "total_steps": STEPS,
            "env": {"name": "corridor", "settings": {"n_agents": N_AGENTS, "length": 12, "max_steps": 18}, "num_envs": 8},
            "model": {"hiddens": [32], "head_hidden": 32},
            "sharing": {"select": select, "bandwidth": 0.1, "window": 300},
            # gamma 0.9 keeps left/right values apart, so greedy policies are stable
            "dqn": {"lr": 1e-3, "gamma": 0.9, "buffer_size": 5000, "learning_starts": 200, "target_update_interval": 100,
                    "epsilon_start": 1.0, "epsilon_end": 0.02, "epsilon_steps": STEPS // 2},
            "report_interval": STEPS // 10,
            "eval": {"interval": STEPS // 10, "episodes": 1},
        }
    )
    run = build_run(config, None, verbose=False)
    run.train()
    run.close()
    return np.array([row["eval_reward_mean"] for row in run.reporter.history]) / N_AGENTS


def test_super_learns_faster_than_independent_agents():
    independent = np.array([_learning_curve("none", s).mean() for s in SEEDS])
    relayed = np.array([_learning_curve("quantile", s).mean() for s in SEEDS])
    assert relayed.mean() - independent.mean() >= 0.08, (relayed, independent)
    assert (relayed > independent).sum() >= 3, (relayed, independent)
