"""MASAC env steps/s: relayrl against BenchMARL, on the same task, batch and update settings, in one run.

What it measures
    Both train MASAC (an actor per agent on its own observation, twin critics per agent on
    every agent's observation and action, a learnt temperature, Box actions) on PettingZoo
    MPE's continuous simple_spread with 3 agents and 25-step episodes, one process, one
    torch thread, CPU: ``--envs`` env copies, ``--frames`` env steps collected between
    rounds of ``--updates`` gradient steps on batches of ``--batch`` joint transitions
    from a replay of 100,000, after ``--frames`` random ones; MLPs of 128-128 ReLU. The
    figure is env steps per second of wall clock over ``--steps`` env steps after one
    warm-up batch (``benchmarl_timing.py``); the updates per env step are the same in both.

    relayrl steps mpe2's simple_spread_v3 (pettingzoo 1.27), BenchMARL pettingzoo 1.24's
    ``pettingzoo.mpe.simple_spread_v3``: the same dynamics, moved to mpe2 in pettingzoo 1.25.

Command
    python benchmarks/masac_vs_benchmarl.py --benchmarl-python /work/bm-venv/bin/python --steps 20000
"""

import argparse

from benchmarl_timing import benchmarl_rate, relayrl_rate, report

BENCHMARL = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from benchmarl.algorithms import MasacConfig
from benchmarl.environments import PettingZooTask
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
a = json.loads(sys.argv[1])
cfg = ExperimentConfig.get_from_yaml()
cfg.max_n_frames = a["steps"] + 2 * a["frames"]
cfg.off_policy_collected_frames_per_batch = a["frames"]
cfg.off_policy_n_envs_per_worker = a["envs"]
cfg.off_policy_n_optimizer_steps = a["updates"]
cfg.off_policy_train_batch_size = a["batch"]
cfg.off_policy_memory_size = 100_000
cfg.off_policy_init_random_frames = a["frames"]
cfg.prefer_continuous_actions = True
cfg.share_policy_params = False
quiet(cfg, a["folder"])
cfg.lr = 5e-4
algorithm = MasacConfig.get_from_yaml()
algorithm.share_param_critic = False
task = PettingZooTask.SIMPLE_SPREAD.get_from_yaml()
task.config.update({"N": 3, "max_cycles": 25, "local_ratio": 0.5, "continuous_actions": True})
model = MlpConfig.get_from_yaml()
model.num_cells = [128, 128]
model.activation_class = torch.nn.ReLU
experiment = Experiment(task=task, algorithm_config=algorithm, model_config=model, critic_model_config=model, seed=0, config=cfg)
start = time.perf_counter()
experiment.run()
wall = time.perf_counter() - start
print(json.dumps({"frames": experiment.total_frames, "wall_s": wall}))
"""


def relayrl_config(envs: int, frames: int, updates: int, batch: int, steps: int) -> dict:
    """relayrl's MASAC on mpe2's continuous simple_spread, one batch per metrics row."""
    section = {"algo": "masac", "actor_lr": 5e-4, "critic_lr": 5e-4, "hidden": [128, 128], "batch_size": batch, "buffer_size": 100_000,
               "random_steps": frames, "fragment_length": frames, "updates_per_fragment": updates}
    return {
        "preset": "bench-masac", "total_steps": steps + 2 * frames, "report_interval": frames, "eval": {"interval": 0},
        "checkpoint_interval": 10**9,
        "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": True}, "num_envs": envs},
        "centralised": section,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarl-python", required=True, help="the python of a venv with benchmarks/benchmarl_requirements.txt")
    parser.add_argument("--envs", type=int, default=10)
    parser.add_argument("--frames", type=int, default=1000, help="env steps collected per round of updates")
    parser.add_argument("--updates", type=int, default=50, help="gradient steps per round (HARL's 50 per 1,000 env steps)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--out", help="write the result as JSON here")
    a = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    ours = relayrl_rate(relayrl_config(a.envs, a.frames, a.updates, a.batch, a.steps))
    args = {"envs": a.envs, "frames": a.frames, "updates": a.updates, "batch": a.batch, "folder": "/tmp"}
    theirs = benchmarl_rate(a.benchmarl_python, BENCHMARL, args, a.steps)
    report(vars(a), ours, theirs, a.out)


if __name__ == "__main__":
    main()
