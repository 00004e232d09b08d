"""QMIX env steps/s: relayrl against BenchMARL's QMIX at the same training per env step, in one run.

What it measures
    BenchMARL 1.5.2 trains QMIX on VMAS simple_spread (3 agents, 100-step episodes, its
    own vectorised torch env) twice: at its defaults (10 envs, batches of 6,000 frames,
    then 1,000 optimiser steps of 128 transitions: 21.3 samples per env step; MLP 256-256
    tanh agents, mixer embedding 32, soft target updates) and at JaxMARL's update ratio
    (8 envs, batches of 208 frames, one optimiser step of 832 transitions: 4.0 samples per
    env step). relayrl trains its QMIX at JaxMARL's ``ql_rnn_mpe`` config on
    ``simple-spread`` (``relayrl.bench.marl``: GRU 64 agents, batches of 32 episodes of 25
    steps), once at JaxMARL's ratio (one update per 8 episodes: 4.0 samples per env step)
    and once at BenchMARL's defaults' (two updates per 3 episodes: 21.3), so each BenchMARL
    figure has a relayrl figure of the same training per env step beside it. One process
    each, one torch thread, CPU. BenchMARL is timed by two runs whose wall clocks differ by
    ``--steps`` env steps (``benchmarl_timing.py``); relayrl after its warm-up.

    The tasks differ (VMAS's simple_spread against mpe2's, which relayrl's env equals) and
    so do the agents (BenchMARL's QMIX has MLP agents on transitions; JaxMARL's config, as
    relayrl runs it, GRU agents on episodes).

Command
    /work/bm-venv/bin/pip install --no-deps vmas==1.5.2 gym==0.26.2 gym-notices six
    python benchmarks/qmix_vs_benchmarl.py --benchmarl-python /work/bm-venv/bin/python
"""

import argparse
import json

from benchmarl_timing import benchmarl_rate

BENCHMARL = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from benchmarl.algorithms import QmixConfig
from benchmarl.environments import VmasTask
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
a = json.loads(sys.argv[1])
cfg = ExperimentConfig.get_from_yaml()
if a["matched"]:  # JaxMARL's ratio: 8 envs x 26 steps, then one step on 32 x 26 transitions
    cfg.off_policy_n_envs_per_worker = 8
    cfg.off_policy_collected_frames_per_batch = 208
    cfg.off_policy_n_optimizer_steps = 1
    cfg.off_policy_train_batch_size = 832
batch = cfg.off_policy_collected_frames_per_batch
cfg.max_n_frames = a["steps"] + batch
cfg.prefer_continuous_actions = False
quiet(cfg, a["folder"])
experiment = Experiment(task=VmasTask.SIMPLE_SPREAD.get_from_yaml(), algorithm_config=QmixConfig.get_from_yaml(),
                        model_config=MlpConfig.get_from_yaml(), seed=0, config=cfg)
start = time.perf_counter()
experiment.run()
wall = time.perf_counter() - start
print(json.dumps({"frames": experiment.total_frames, "wall_s": wall, "batches": experiment.n_iters_performed}))
"""


# BenchMARL 1.5.2's QMIX defaults: 1,000 optimiser steps of 128 transitions per 6,000 frames
DEFAULT_SAMPLES = 1000 * 128 / 6000
MATCHED_SAMPLES = 832 / 208


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarl-python", required=True, help="the python of a venv with benchmarks/benchmarl_requirements.txt and vmas")
    parser.add_argument("--steps", type=int, default=12_000, help="env steps timed on each side")
    parser.add_argument("--out", help="write the result as JSON here")
    a = parser.parse_args()
    import torch

    from relayrl.bench.marl import relayrl_rate

    torch.set_num_threads(1)
    ours = relayrl_rate("qmix", a.steps, 4_000)
    ours_default = relayrl_rate("qmix", a.steps, 4_000, updates_per_episode=DEFAULT_SAMPLES / 32)
    default = benchmarl_rate(a.benchmarl_python, BENCHMARL, {"matched": False, "folder": "/tmp"}, a.steps)
    matched = benchmarl_rate(a.benchmarl_python, BENCHMARL, {"matched": True, "folder": "/tmp"}, a.steps)
    default["samples_per_env_step"], matched["samples_per_env_step"] = DEFAULT_SAMPLES, MATCHED_SAMPLES
    result = {
        "settings": vars(a), "relayrl": ours, "relayrl_at_defaults_ratio": ours_default, "benchmarl_defaults": default, "benchmarl_matched": matched,
        "ratio_vs_defaults": ours_default["sps"] / default["sps"], "ratio_vs_matched": ours["sps"] / matched["sps"],
    }
    print(json.dumps(result, indent=2))
    if a.out:
        with open(a.out, "w") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
