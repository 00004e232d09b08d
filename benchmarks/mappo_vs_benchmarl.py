"""MAPPO env steps/s: relayrl against BenchMARL, on the same task and batch settings, in one run.

What it measures, at one of three configs (``--config``), one process each and ``--threads``
torch threads each (default one), CPU:

``mappo-paper`` (default)
    MAPPO (one actor network shared by the agents, a centralised critic on the global
    state, discrete actions) on PettingZoo MPE's cooperative navigation, simple_spread with
    3 agents and 25-step episodes: ``--envs`` env copies stepped in turn, batches of
    ``--envs`` x ``--rollout`` env steps, ``--epochs`` passes of one minibatch over each
    batch (the MAPPO paper's MPE setting: one minibatch, 10 epochs), MLPs of 64-64 ReLU for
    actor and critic. relayrl steps mpe2's simple_spread_v3 (pettingzoo 1.27); BenchMARL's
    PettingZoo task needs pettingzoo 1.24's ``pettingzoo.mpe.simple_spread_v3``: the same
    dynamics, moved to the mpe2 package in pettingzoo 1.25.

``jaxmarl``
    JaxMARL's recurrent MAPPO MPE config (``relayrl.bench.marl``, preset
    ``spread-mappo-jaxmarl``): 16 envs, rollouts of 128 steps, 4 epochs of 4 minibatches,
    a layer of 128 then a GRU of 128 in actor and critic, each env step trained 4 times.
    relayrl steps ``simple-spread`` (mpe2's dynamics as arrays); BenchMARL its own
    vectorised VMAS simple_spread with 25-step episodes, the same batch, epochs and
    minibatches, a linear layer of 128 then its GRU of 128 (``SequenceModelConfig``), Adam
    2e-3, GAE 0.95, entropy 0.01, value coefficient 0.5.

``benchmarl``
    BenchMARL 1.5.2's own MAPPO defaults, as a user meets them, on both sides: 3 agents of
    discrete actions, 100-step episodes (relayrl's ``simple-spread``, BenchMARL's VMAS
    simple_spread), 10 envs, batches of 6,000 frames, then 45 passes over the batch in
    minibatches of 400 (BenchMARL's ``on_policy_n_minibatch_iters`` counts passes: its
    trainer runs 6,000 / 400 minibatches in each), so each env step is trained 45 times;
    a minibatch holds whole env steps (BenchMARL samples frames, each with all the agents);
    MLPs of 256-256 tanh, one actor shared by the agents, a critic on all agents'
    observations, Adam 5e-5 (eps 1e-6), GAE 0.9, clip 0.2, no entropy bonus, gradient norm 5.

The figure is env steps per second of wall clock over ``--steps`` env steps after one
warm-up batch (``benchmarl_timing.py``; relayrl at ``jaxmarl`` as ``relayrl bench --only
marl`` times it).

Command
    python -m venv /work/bm-venv && /work/bm-venv/bin/pip install torch==2.13.0 &&
    /work/bm-venv/bin/pip install --no-deps -r benchmarks/benchmarl_requirements.txt
    python benchmarks/mappo_vs_benchmarl.py --benchmarl-python /work/bm-venv/bin/python --steps 96000
    (``--config jaxmarl`` also needs vmas: see ``qmix_vs_benchmarl.py``)
"""

import argparse

from benchmarl_timing import benchmarl_rate, relayrl_rate, report

BENCHMARL = r"""
import json, sys, time
import torch
a = json.loads(sys.argv[1])
torch.set_num_threads(a["threads"])
from benchmarl.algorithms import MappoConfig
from benchmarl.environments import PettingZooTask, VmasTask
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models import GruConfig, MlpConfig, SequenceModelConfig
cfg = ExperimentConfig.get_from_yaml()
if a["config"] != "defaults":
    cfg.on_policy_collected_frames_per_batch = a["envs"] * a["rollout"]
    cfg.on_policy_n_envs_per_worker = a["envs"]
    cfg.on_policy_n_minibatch_iters = a["epochs"]
    cfg.on_policy_minibatch_size = a["envs"] * a["rollout"] // a["minibatches"]
    cfg.lr = a["lr"]
cfg.max_n_frames = a["steps"] + cfg.on_policy_collected_frames_per_batch
cfg.prefer_continuous_actions = False
cfg.share_policy_params = True
quiet(cfg, a["folder"])
algorithm = MappoConfig.get_from_yaml()
if a["config"] == "defaults":
    task, model = VmasTask.SIMPLE_SPREAD.get_from_yaml(), MlpConfig.get_from_yaml()
elif a["config"] == "jaxmarl":
    cfg.gamma = 0.99
    algorithm.entropy_coef, algorithm.lmbda, algorithm.critic_coef = 0.01, 0.95, 0.5
    task = VmasTask.SIMPLE_SPREAD.get_from_yaml()
    task.config["max_steps"] = 25
    layer = MlpConfig(num_cells=[], activation_class=torch.nn.Tanh, layer_class=torch.nn.Linear)
    gru = GruConfig(hidden_size=128, n_layers=1, bias=True, dropout=0, compile=False, mlp_num_cells=[],
                    mlp_activation_class=torch.nn.Tanh, mlp_layer_class=torch.nn.Linear)
    model = SequenceModelConfig(model_configs=[layer, gru], intermediate_sizes=[128])
else:
    task = PettingZooTask.SIMPLE_SPREAD.get_from_yaml()
    task.config.update({"N": 3, "max_cycles": 25, "local_ratio": 0.5})
    model = MlpConfig.get_from_yaml()
    model.num_cells = [64, 64]
    model.activation_class = torch.nn.ReLU
experiment = Experiment(task=task, algorithm_config=algorithm, model_config=model, critic_model_config=model, seed=0, config=cfg)
start = time.perf_counter()
experiment.run()
wall = time.perf_counter() - start
print(json.dumps({"frames": experiment.total_frames, "wall_s": wall, "batches": experiment.n_iters_performed}))
"""


# BenchMARL 1.5.2's defaults (``conf/experiment/base_experiment.yaml``, ``conf/algorithm/mappo.yaml``,
# ``conf/model/layers/mlp.yaml``, ``conf/task/vmas/simple_spread.yaml``) as relayrl's settings
BENCHMARL_DEFAULTS = {
    "env": {"name": "simple-spread", "settings": {"N": 3, "max_cycles": 100, "continuous_actions": False}, "num_envs": 10},
    "on_policy": {
        "algo": "mappo", "critic_input": "joint_obs", "rollout_length": 600, "epochs": 45, "minibatches": 15, "hidden": [256, 256], "activation": "tanh",
        "lr": 5e-5, "adam_eps": 1e-6, "gamma": 0.99, "gae_lambda": 0.9, "clip": 0.2, "value_clip": None, "value_loss": "mse", "value_coef": 1.0,
        "entropy_coef": 0.0, "max_grad_norm": 5.0, "normalize_values": False, "agent_id": False, "minibatch_unit": "env_step",
    },
}


def relayrl_config(envs: int, rollout: int, epochs: int, steps: int, threads: int) -> dict:
    """relayrl's MAPPO on mpe2's simple_spread, one batch per metrics row."""
    batch = envs * rollout
    return {
        "preset": "bench-mappo", "total_steps": steps + batch, "report_interval": batch, "eval": {"interval": 0},
        "checkpoint_interval": 10**9, "torch_threads": threads,
        "env": {"name": "mpe2.simple_spread_v3", "settings": {"N": 3, "max_cycles": 25, "continuous_actions": False}, "num_envs": envs},
        "on_policy": {"algo": "mappo", "rollout_length": rollout, "epochs": epochs, "minibatches": 1, "hidden": [64, 64], "activation": "relu"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarl-python", required=True, help="the python of a venv with benchmarks/benchmarl_requirements.txt")
    parser.add_argument("--config", choices=("mappo-paper", "jaxmarl", "benchmarl"), default="mappo-paper")
    parser.add_argument("--envs", type=int, default=16, help="mappo-paper only")
    parser.add_argument("--rollout", type=int, default=50, help="mappo-paper only")
    parser.add_argument("--epochs", type=int, default=10, help="mappo-paper only")
    parser.add_argument("--steps", type=int, default=96_000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each side")
    parser.add_argument("--out", help="write the result as JSON here")
    a = parser.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    if a.config == "jaxmarl":
        from relayrl.bench.marl import relayrl_rate as bench_rate

        ours = bench_rate("mappo", a.steps, 16 * 128, threads=a.threads)
        settings = {"config": "jaxmarl", "envs": 16, "rollout": 128, "epochs": 4, "minibatches": 4, "lr": 2e-3, "threads": a.threads, "samples_per_env_step": 4}
    elif a.config == "benchmarl":
        batch = 6_000
        config = {"preset": "bench-mappo-benchmarl", "total_steps": a.steps + batch, "report_interval": batch, "eval": {"interval": 0}, "checkpoint_interval": 10**9, "torch_threads": a.threads}
        ours = relayrl_rate({**config, **BENCHMARL_DEFAULTS})
        settings = {"config": "defaults", "threads": a.threads, "samples_per_env_step": 45}
    else:
        ours = relayrl_rate(relayrl_config(a.envs, a.rollout, a.epochs, a.steps, a.threads))
        settings = {"config": "mappo-paper", "envs": a.envs, "rollout": a.rollout, "epochs": a.epochs, "minibatches": 1, "lr": 7e-4, "threads": a.threads, "samples_per_env_step": a.epochs}
    theirs = benchmarl_rate(a.benchmarl_python, BENCHMARL, {**settings, "folder": "/tmp"}, a.steps)
    report({**vars(a), **settings}, ours, theirs, a.out)


if __name__ == "__main__":
    main()
