"""MAPPO env steps/s: relayrl against BenchMARL, on the same task and batch settings, in one run.

What it measures
    Both train MAPPO (one actor network shared by the agents, a centralised critic on the
    global state, discrete actions) on PettingZoo MPE's cooperative navigation, simple_spread
    with 3 agents and 25-step episodes, one process, one torch thread, CPU:
    ``--envs`` env copies stepped in turn, batches of ``--envs`` x ``--rollout`` env steps,
    ``--epochs`` passes of one minibatch over each batch (the MAPPO paper's MPE setting: one
    minibatch, 10 epochs), MLPs of 64-64 ReLU for actor and critic. The figure is env steps
    per second of wall clock over ``--steps`` env steps after one warm-up batch (relayrl: its
    own ``sps`` over the run's rows after the first; BenchMARL: the timed ``Experiment.run``
    minus one batch's time, measured by its own counter of collected frames).

    relayrl steps mpe2's simple_spread_v3 (pettingzoo 1.27); BenchMARL's PettingZoo task
    needs pettingzoo 1.24's ``pettingzoo.mpe.simple_spread_v3``: the same dynamics, moved to
    the mpe2 package in pettingzoo 1.25.

Command
    python -m venv /work/bm-venv && /work/bm-venv/bin/pip install torch==2.13.0 &&
    /work/bm-venv/bin/pip install --no-deps -r benchmarks/benchmarl_requirements.txt
    python benchmarks/mappo_vs_benchmarl.py --benchmarl-python /work/bm-venv/bin/python --steps 96000
"""

import argparse
import json
import subprocess
import sys
import time

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
cfg.evaluation = False
cfg.render = False
cfg.loggers = []
cfg.create_json = False
cfg.checkpoint_interval = 0
cfg.save_folder = a["folder"]
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


def relayrl_sps(envs: int, rollout: int, epochs: int, steps: int) -> dict[str, float]:
    """relayrl's MAPPO on mpe2's simple_spread: env steps/s after the first batch."""
    from relayrl.experiment import build_config, build_run

    batch = envs * rollout
    config = build_config({
        "preset": "bench-mappo", "total_steps": steps + batch, "report_interval": batch, "eval": {"interval": 0},
        "checkpoint_interval": 10**9,
        "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": False}, "num_envs": envs},
        "on_policy": {"algo": "mappo", "rollout_length": rollout, "epochs": epochs, "minibatches": 1, "hidden": [64, 64], "activation": "relu"},
    })
    run = build_run(config, None, verbose=False)
    start = time.perf_counter()
    run.train()
    wall = time.perf_counter() - start
    run.close()
    rows = run.reporter.history
    timed = rows[-1]["env_steps"] - rows[0]["env_steps"]
    seconds = rows[-1]["wall_s"] - rows[0]["wall_s"]
    return {"env_steps": timed, "seconds": seconds, "sps": timed / seconds, "wall_s": wall}


def benchmarl_sps(python: str, envs: int, rollout: int, epochs: int, steps: int) -> dict[str, float]:
    """BenchMARL's MAPPO: two runs, one batch and ``steps`` + one batch; the difference of
    their wall clocks is the time of ``steps`` env steps after the first batch."""
    def timed(total: int) -> dict[str, float]:
        args = json.dumps({"envs": envs, "rollout": rollout, "epochs": epochs, "steps": total, "folder": "/tmp"})
        out = subprocess.run([python, "-c", BENCHMARL, args], capture_output=True, text=True, check=False)
        if out.returncode:
            raise RuntimeError(f"BenchMARL failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    short, long = timed(0), timed(steps)
    seconds = long["wall_s"] - short["wall_s"]
    frames = long["frames"] - short["frames"]
    return {"env_steps": frames, "seconds": seconds, "sps": frames / seconds, "wall_s": long["wall_s"]}


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
    ours = relayrl_sps(a.envs, a.rollout, a.epochs, a.steps)
    theirs = benchmarl_sps(a.benchmarl_python, a.envs, a.rollout, a.epochs, a.steps)
    result = {"settings": vars(a), "relayrl": ours, "benchmarl": theirs, "ratio": ours["sps"] / theirs["sps"]}
    print(json.dumps(result, indent=2))
    if a.out:
        with open(a.out, "w") as handle:
            json.dump(result, handle, indent=2)
    print(f"relayrl {ours['sps']:.0f} env steps/s, BenchMARL {theirs['sps']:.0f}: {result['ratio']:.2f}x", file=sys.stderr)


if __name__ == "__main__":
    main()
