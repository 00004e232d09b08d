"""MAPPO env steps/s: relayrl against BenchMARL, on the same task and batch settings, in one run.

What it measures
    Both train MAPPO (one actor network shared by the agents, a centralised critic on the
    global state, discrete actions) on PettingZoo MPE's cooperative navigation, simple_spread
    with 3 agents and 25-step episodes, one process, one torch thread, CPU:
    ``--envs`` env copies stepped in turn, batches of ``--envs`` x ``--rollout`` env steps,
    ``--epochs`` passes of one minibatch over each batch (the MAPPO paper's MPE setting: one
    minibatch, 10 epochs), MLPs of 64-64 ReLU for actor and critic. The figure is env steps
    per second of wall clock over ``--steps`` env steps after one warm-up batch
    (``benchmarl_timing.py``).

    relayrl steps mpe2's simple_spread_v3 (pettingzoo 1.27); BenchMARL's PettingZoo task
    needs pettingzoo 1.24's ``pettingzoo.mpe.simple_spread_v3``: the same dynamics, moved to
    the mpe2 package in pettingzoo 1.25.

Command
    python -m venv /work/bm-venv && /work/bm-venv/bin/pip install torch==2.13.0 &&
    /work/bm-venv/bin/pip install --no-deps -r benchmarks/benchmarl_requirements.txt
    python benchmarks/mappo_vs_benchmarl.py --benchmarl-python /work/bm-venv/bin/python --steps 96000
"""

import argparse

from benchmarl_timing import benchmarl_rate, relayrl_rate, report

BENCHMARL = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from benchmarl.algorithms import MappoConfig
from benchmarl.environments import PettingZooTask
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
a = json.loads(sys.argv[1])
batch = a["envs"] * a["rollout"]
cfg = ExperimentConfig.get_from_yaml()
cfg.max_n_frames = a["steps"] + batch
cfg.on_policy_collected_frames_per_batch = batch
cfg.on_policy_n_envs_per_worker = a["envs"]
cfg.on_policy_n_minibatch_iters = a["epochs"]
cfg.on_policy_minibatch_size = batch
cfg.prefer_continuous_actions = False
cfg.share_policy_params = True
quiet(cfg, a["folder"])
cfg.lr = 7e-4
task = PettingZooTask.SIMPLE_SPREAD.get_from_yaml()
task.config.update({"N": 3, "max_cycles": 25, "local_ratio": 0.5})
model = MlpConfig.get_from_yaml()
model.num_cells = [64, 64]
model.activation_class = torch.nn.ReLU
experiment = Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(), model_config=model,
                        critic_model_config=model, seed=0, config=cfg)
start = time.perf_counter()
experiment.run()
wall = time.perf_counter() - start
print(json.dumps({"frames": experiment.total_frames, "wall_s": wall, "batches": experiment.n_iters_performed}))
"""


def relayrl_config(envs: int, rollout: int, epochs: int, steps: int) -> dict:
    """relayrl's MAPPO on mpe2's simple_spread, one batch per metrics row."""
    batch = envs * rollout
    return {
        "preset": "bench-mappo", "total_steps": steps + batch, "report_interval": batch, "eval": {"interval": 0},
        "checkpoint_interval": 10**9,
        "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": False}, "num_envs": envs},
        "on_policy": {"algo": "mappo", "rollout_length": rollout, "epochs": epochs, "minibatches": 1, "hidden": [64, 64], "activation": "relu"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarl-python", required=True, help="the python of a venv with benchmarks/benchmarl_requirements.txt")
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--rollout", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=96_000)
    parser.add_argument("--out", help="write the result as JSON here")
    a = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    ours = relayrl_rate(relayrl_config(a.envs, a.rollout, a.epochs, a.steps))
    theirs = benchmarl_rate(a.benchmarl_python, BENCHMARL, {"envs": a.envs, "rollout": a.rollout, "epochs": a.epochs, "folder": "/tmp"}, a.steps)
    report(vars(a), ours, theirs, a.out)


if __name__ == "__main__":
    main()
