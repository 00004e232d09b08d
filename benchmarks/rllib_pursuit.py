"""Baseline: RLlib's training throughput on Pursuit with 8 independent DQN policies.

What it measures
    Ray RLlib 2.60.0 (new API stack: RLModule + Learner + EnvRunner + ConnectorV2) training
    one dueling double DQN policy per pursuer ("pursuer_i" -> policy "pursuer_i") on
    PettingZoo's ``pursuit_v5.parallel_env`` with the SUPER paper's Pursuit settings, all in
    one process (no remote EnvRunners, no remote Learners, CPU only), which is how relayrl
    runs. It reports env steps/s, gradient updates/s per policy, the wall time of one RLlib
    training iteration, RLlib's own timers, this script's own breakdown of where the time
    went, and the peak RSS of the process.

How
    1. Build the algorithm (``DQNConfig.build_algo()``).
    2. Call ``algo.train()`` until learning has started (RLlib samples
       ``num_steps_sampled_before_learning_starts`` = 1000 env steps before its first
       update) and then for a further warm-up (``--warmup`` env steps).
    3. Time a window of at least ``--steps`` env steps: whole ``algo.train()`` calls, each of
       at least ``--iter-steps`` env steps (RLlib's ``min_sample_timesteps_per_iteration``),
       between two ``time.perf_counter()`` reads.

    Updates are counted twice and must agree: (a) a post-step hook on each policy's torch
    optimizer counts ``optimizer.step()`` calls, i.e. real gradient updates per policy;
    (b) RLlib's learner metric ``num_module_steps_trained_lifetime`` per policy, divided by
    the train batch size (32), i.e. the transitions RLlib says it trained on / 32.
    With the settings below RLlib does one update of 32 transitions per policy per
    4 sampled env steps, so updates/s per policy should be env steps/s / 4.

    Peak RSS is ``getrusage(RUSAGE_SELF).ru_maxrss`` of this process, where all the work
    runs. RLlib still starts a local Ray instance (its EnvRunnerGroup calls ``ray.put``
    even with no remote EnvRunners); the RSS and the CPU seconds of those helper processes
    (gcs_server, raylet, idle workers) are reported separately.

Command (ray[rllib]==2.60.0 pins gymnasium==1.2.2 while relayrl's other extras use 1.4, so
it goes in its own venv; --system-site-packages keeps the system torch and relayrl visible)
    python -m venv --system-site-packages ~/venvs/rllib
    ~/venvs/rllib/bin/pip install -c constraints.txt "ray[rllib]==2.60.0"   # the `rllib` extra
    ~/venvs/rllib/bin/python benchmarks/rllib_pursuit.py --threads 1 --out rllib_pursuit_t1.json
    ~/venvs/rllib/bin/python benchmarks/rllib_pursuit.py --threads 0 --out rllib_pursuit_tdefault.json
    ~/venvs/rllib/bin/python benchmarks/rllib_pursuit.py --quick    # smoke run, numbers meaningless
Run the measurement on an idle machine, once with 1 torch intra-op thread (relayrl's
setting) and once with torch's default (--threads 0).

Settings that RLlib cannot take exactly as relayrl/the paper use them are listed in
``UNMATCHED`` below; the script prints them with the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

try:
    import ray
    from ray.rllib.algorithms.dqn import DQNConfig
except ImportError:
    sys.exit(
        "benchmarks/rllib_pursuit.py needs Ray RLlib: pip install -c constraints.txt "
        '"ray[rllib]==2.60.0" (it pins gymnasium==1.2.2, so use a separate venv; see the '
        "docstring)"
    )

import numpy as np
import torch

RAY_VERSION = "2.60.0"
N_PURSUERS = 8
POLICIES = [f"pursuer_{i}" for i in range(N_PURSUERS)]

# Pursuit as in the SUPER paper (every argument passed explicitly, none left to defaults);
# the same values as relayrl's pursuit preset (relayrl/experiment/config.py, SPEC §1.1).
PURSUIT_KWARGS = dict(
    x_size=16,
    y_size=16,
    n_evaders=30,
    n_pursuers=N_PURSUERS,
    obs_range=7,
    n_catch=2,
    freeze_evaders=False,
    tag_reward=0.01,
    catch_reward=5.0,
    urgency_reward=-0.1,
    surround=True,
    max_cycles=500,
    shared_reward=False,
    constraint_window=1.0,
)

# DQN settings: the SUPER paper's Pursuit column, as relayrl.experiment.config.DQNConfig has
# them. Step counts are env steps.
LR = 1.6e-4
TRAIN_BATCH = 32  # per policy
CAPACITY = 120_000  # per policy
ALPHA, BETA, PRIORITY_EPS = 0.6, 0.4, 1e-6
GAMMA = 0.99
TARGET_UPDATE = 1000
FRAGMENT = 4  # env steps sampled between two updates
LEARNING_STARTS = 1000
EPSILON = [(0, 0.1), (100_000, 0.001)]
GRAD_CLIP = 40.0

# What could not be matched, and why (printed and stored with every result).
UNMATCHED = {
    "network": (
        "RLlib's default DQN RLModule has an encoder (for 7x7x3 observations: the conv stack, "
        "flattened to 1024) and two separate MLP heads (advantage, value); it has no dense "
        "layers between the CNN and the heads (fcnet_hiddens is ignored for image "
        "observations). relayrl: convs -> 1024 -> 64 ReLU -> 256 (linear) shared, then "
        "advantage 256 -> 256 ReLU -> 5 and value 256 -> 256 ReLU -> 1. --model stock "
        "(default) puts the 64/256 layers in each head (head_fcnet_hiddens=[64, 256, 256]): "
        "each stream has the same layer widths but the 1024->64->256 part is not shared "
        "(two copies, ~1.3x the parameters) and has a ReLU after the 256 layer. --model "
        "exact gives the identical network through a custom Catalog (an RLlib extension "
        "point, not the stock module)."
    ),
    "conv padding": (
        "RLlib's conv_filters default to padding='same'; 'valid' is passed explicitly so that "
        "7x7 -> 6x6 -> 5x5 -> 4x4 as in relayrl."
    ),
    "priority eps": (
        "the new-stack prioritized episode buffer sets priority = max(|TD error|, 1e-12) "
        "(no configurable eps); relayrl uses |TD error| + 1e-6."
    ),
    "replay capacity": (
        "one MultiAgentPrioritizedEpisodeReplayBuffer for all policies, capacity 120000 env "
        "steps (= 120000 transitions per policy since every pursuer acts every step), evicting "
        "whole episode chunks; relayrl: one 120000-transition ring buffer per policy."
    ),
    "adam eps": (
        "new-stack TorchLearner builds torch.optim.Adam with torch's default eps=1e-8 "
        "(DQNConfig.adam_epsilon is only read by the old stack); equals relayrl's 1e-8."
    ),
    "losses": (
        "RLlib sums the 8 policies' losses and calls backward once, then clips each policy's "
        "gradients to global norm 40 and steps each policy's Adam; gradients are the same as "
        "8 separate updates because the policies share no parameters."
    ),
    "time limit": (
        "RLlib bootstraps on truncation at max_cycles (only terminations cut the target); "
        "relayrl's default time_limit_as_terminal=False does the same."
    ),
}


# ---------------------------------------------------------------------------------------
# Environment


def make_env(env_config: dict):
    """RLlib env creator: PettingZoo's parallel Pursuit wrapped as an RLlib MultiAgentEnv."""
    from pettingzoo.sisl import pursuit_v5
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    return ParallelPettingZooEnv(pursuit_v5.parallel_env(**env_config))


# ---------------------------------------------------------------------------------------
# The "exact" network: RLlib's DQN module with a catalog whose encoder is
# convs -> flatten -> 1024 -> 64 ReLU -> 256 (shared by both dueling heads).


def exact_catalog_class():
    from dataclasses import dataclass as _dataclass

    from ray.rllib.algorithms.dqn.dqn_catalog import DQNCatalog
    from ray.rllib.core.models.configs import CNNEncoderConfig
    from ray.rllib.core.models.torch.encoder import TorchCNNEncoder

    @_dataclass
    class ConvMLPEncoderConfig(CNNEncoderConfig):
        mlp_hiddens: tuple = (64, 256)  # relayrl ModelConfig.hiddens

        @property
        def conv_output_dims(self):
            return CNNEncoderConfig.output_dims.fget(self)

        @property
        def output_dims(self):
            return (self.mlp_hiddens[-1],)

        def build(self, framework: str = "torch"):
            self._validate(framework)
            return ConvMLPEncoder(self)

    class ConvMLPEncoder(TorchCNNEncoder):
        def __init__(self, config: ConvMLPEncoderConfig) -> None:
            super().__init__(config)  # self.net = convs (+ReLU) -> flatten
            layers, width = [self.net], int(config.conv_output_dims[0])
            for i, out in enumerate(config.mlp_hiddens):
                layers.append(torch.nn.Linear(width, out))
                if i < len(config.mlp_hiddens) - 1:  # no activation on the torso's output
                    layers.append(torch.nn.ReLU())
                width = out
            self.net = torch.nn.Sequential(*layers)

    class ExactDQNCatalog(DQNCatalog):
        @classmethod
        def _get_encoder_config(cls, observation_space, model_config_dict, action_space=None):
            base = super()._get_encoder_config(
                observation_space=observation_space,
                model_config_dict=model_config_dict,
                action_space=action_space,
            )
            assert isinstance(base, CNNEncoderConfig), base
            return ConvMLPEncoderConfig(
                input_dims=base.input_dims,
                cnn_filter_specifiers=base.cnn_filter_specifiers,
                cnn_activation=base.cnn_activation,
                cnn_kernel_initializer=base.cnn_kernel_initializer,
                cnn_kernel_initializer_config=base.cnn_kernel_initializer_config,
                cnn_bias_initializer=base.cnn_bias_initializer,
                cnn_bias_initializer_config=base.cnn_bias_initializer_config,
            )

    return ExactDQNCatalog


# ---------------------------------------------------------------------------------------
# Config


def build_config(args: argparse.Namespace) -> DQNConfig:
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    # Three 2x2 stride-1 convolutions, 32/64/64 channels, ReLU, no padding (SPEC §1.1).
    conv_filters = [[32, 2, 1, "valid"], [64, 2, 1, "valid"], [64, 2, 1, "valid"]]
    if args.model == "stock":
        head_hiddens = [64, 256, 256]  # see UNMATCHED["network"]
    else:
        head_hiddens = [256]  # the 64/256 torso is in the encoder
    model_config = DefaultModelConfig(
        conv_filters=conv_filters,
        conv_activation="relu",
        head_fcnet_hiddens=head_hiddens,
        head_fcnet_activation="relu",
    )

    config = (
        DQNConfig()
        # New API stack (the default in 2.60; set explicitly).
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(env="rllib_pursuit", env_config=dict(PURSUIT_KWARGS), disable_env_checking=True)
        .framework("torch")
        # One env, sampled by the local EnvRunner in this process: no remote EnvRunners.
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=1,
            rollout_fragment_length=FRAGMENT,  # 4 env steps per sample() call
            batch_mode="truncate_episodes",
            explore=True,
        )
        # Local learner in this process, CPU only.
        .learners(num_learners=0, num_gpus_per_learner=0)
        .resources(num_gpus=0)
        .multi_agent(
            policies=set(POLICIES),
            policy_mapping_fn=lambda agent_id, episode, **kwargs: agent_id,
            policies_to_train=list(POLICIES),
            # Count rollout fragments, learning_starts, target updates and epsilon in env
            # steps (as relayrl does), not agent steps.
            count_steps_by="env_steps",
        )
        .training(
            lr=LR,
            gamma=GAMMA,
            # Per learner, and with num_learners=0 the one local learner: the replay buffer
            # is sampled with num_items=32 in "independent" mode, i.e. 32 transitions for
            # *each* policy per update.
            train_batch_size_per_learner=TRAIN_BATCH,
            num_epochs=1,
            minibatch_size=None,
            replay_buffer_config={
                "type": "MultiAgentPrioritizedEpisodeReplayBuffer",
                "capacity": CAPACITY,
                "alpha": ALPHA,
                "beta": BETA,  # constant, as in relayrl
            },
            double_q=True,
            dueling=True,
            num_atoms=1,
            noisy=False,
            n_step=1,
            target_network_update_freq=TARGET_UPDATE,
            tau=1.0,  # hard copy
            num_steps_sampled_before_learning_starts=LEARNING_STARTS,
            # calculate_rr_weights(): native ratio = train batch / (fragment x envs x
            # (env runners + 1)) = 32 / 4 = 8 replayed per sampled step; asking for 8 gives
            # round-robin weights [1, 1]: one sample() of 4 env steps, then one update of 32
            # per policy. Checked in main().
            training_intensity=TRAIN_BATCH / FRAGMENT,
            epsilon=EPSILON,  # linear 0.1 -> 0.001 over 100k env steps
            td_error_loss_fn="huber",  # torch HuberLoss, delta 1.0 (relayrl huber_delta=1)
            grad_clip=GRAD_CLIP,
            grad_clip_by="global_norm",
            adam_epsilon=1e-8,  # not read by the new stack; see UNMATCHED["adam eps"]
        )
        .rl_module(model_config=model_config)
        .reporting(
            min_sample_timesteps_per_iteration=args.iter_steps,
            min_time_s_per_iteration=0,
            min_train_timesteps_per_iteration=0,
        )
        .evaluation(evaluation_interval=None)
        .debugging(seed=args.seed, log_level="WARN")
    )
    if args.model == "exact":
        # Same default DQN RLModule class, but its encoder comes from our catalog. A single
        # RLModuleSpec is used as the template for every policy's module.
        config.rl_module(rl_module_spec=RLModuleSpec(catalog_class=exact_catalog_class()))
    return config


# ---------------------------------------------------------------------------------------
# Instrumentation


@dataclass
class Probe:
    """Counts optimizer steps per policy and accumulates wall time of wrapped calls."""

    steps: dict = field(default_factory=lambda: defaultdict(int))
    seconds: dict = field(default_factory=lambda: defaultdict(float))
    calls: dict = field(default_factory=lambda: defaultdict(int))

    def wrap(self, obj, name: str, label: str) -> None:
        inner = getattr(obj, name)

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                self.seconds[label] += time.perf_counter() - t
                self.calls[label] += 1

        setattr(obj, name, timed)

    def snapshot(self) -> dict:
        return {
            "steps": dict(self.steps),
            "seconds": dict(self.seconds),
            "calls": dict(self.calls),
        }


def instrument(algo) -> Probe:
    probe = Probe()
    learner = algo.learner_group._learner  # num_learners=0: the learner lives in this process
    assert learner is not None, "expected a local learner (num_learners=0)"
    for pid in POLICIES:
        opt = learner.get_optimizer(module_id=pid)

        def hook(_opt, _args, _kwargs, pid=pid):
            probe.steps[pid] += 1

        opt.register_step_post_hook(hook)
    runner = algo.env_runner_group.local_env_runner
    probe.wrap(runner, "sample", "env_runner.sample (env + inference)")
    buf = algo.local_replay_buffer
    probe.wrap(buf, "add", "replay.add")
    probe.wrap(buf, "sample", "replay.sample")
    probe.wrap(buf, "update_priorities", "replay.update_priorities")
    probe.wrap(algo.learner_group, "update", "learner_group.update (8 policies)")
    # With num_env_runners=0 this copies the learner's weights into the local EnvRunner's
    # (inference-only) modules after every update round.
    probe.wrap(algo.env_runner_group, "sync_weights", "env_runner_group.sync_weights")
    return probe


def lifetime_env_steps(result: dict) -> int:
    return int(result["env_runners"]["num_env_steps_sampled_lifetime"])


def module_steps_trained(result: dict) -> dict[str, int]:
    learners = result.get("learners", {})
    return {pid: int(learners.get(pid, {}).get("num_module_steps_trained_lifetime", 0)) for pid in POLICIES}


def descendants(root: int) -> list[int]:
    """PIDs of all processes below ``root`` (Ray's gcs_server, raylet and its workers)."""
    children = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[ppid].append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def helpers_cpu_rss() -> tuple[float, float, int]:
    """(CPU seconds used so far, current RSS in MiB, count) of this process's descendants."""
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    cpu = rss = 0.0
    pids = descendants(os.getpid())
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
            rss += int(fields[21]) * page / 2**20
        except (OSError, IndexError, ValueError):
            continue
    return cpu, rss, len(pids)


def rss_mib() -> tuple[float, float]:
    """(current VmRSS, peak ru_maxrss) of this process in MiB."""
    cur = float("nan")
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) / 1024
    except OSError:
        pass
    return cur, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=2000, help="env steps in the timed window (at least)")
    p.add_argument("--warmup", type=int, default=1000, help="env steps after learning starts, untimed")
    p.add_argument("--iter-steps", type=int, default=1000,
                   help="env steps per algo.train() (min_sample_timesteps_per_iteration; DQN default 1000)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads; 0 = torch's default")
    p.add_argument("--model", choices=["stock", "exact"], default="stock",
                   help="stock: RLlib's default DQN module via model_config; exact: relayrl's network")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="short smoke run (numbers are not meaningful)")
    p.add_argument("--out", help="also write the JSON result to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.warmup, args.iter_steps = 400, 100, 200
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if ray.__version__ != RAY_VERSION:
        print(f"warning: measured with ray {ray.__version__}, the baseline is pinned to {RAY_VERSION}",
              file=sys.stderr)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights
    from ray.tune.registry import register_env

    # RLlib's EnvRunnerGroup calls ray.put() even with num_env_runners=0, which starts a
    # local Ray instance (gcs_server, raylet, idle workers) if none is running. Start it here,
    # as small as it goes, so that its cost is at least visible: helper CPU time and RSS are
    # reported separately from this process's.
    ray.init(num_cpus=1, num_gpus=0, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    register_env("rllib_pursuit", make_env)
    config = build_config(args)
    rr = calculate_rr_weights(config)
    assert rr == [1, 1], f"expected 1 sample() : 1 update per training_step, got {rr}"

    t = time.perf_counter()
    algo = config.build_algo()
    build_s = time.perf_counter() - t
    probe = instrument(algo)

    # Learning starts + warm-up (untimed).
    t = time.perf_counter()

    def progress(phase: str) -> None:
        print(f"[{time.perf_counter() - t:7.1f} s] {phase}: {lifetime_env_steps(result)} env steps, "
              f"{probe.steps.get(POLICIES[0], 0)} updates per policy", file=sys.stderr, flush=True)

    result = algo.train()
    progress("warm-up")
    while lifetime_env_steps(result) < LEARNING_STARTS + args.warmup or not probe.steps:
        result = algo.train()
        progress("warm-up")
    warmup_s = time.perf_counter() - t

    # Timed window.
    steps0 = lifetime_env_steps(result)
    trained0 = module_steps_trained(result)
    snap0 = probe.snapshot()
    iter_times, iter_steps = [], []
    helper_cpu0, _, _ = helpers_cpu_rss()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    while True:
        ti = time.perf_counter()
        result = algo.train()
        iter_times.append(time.perf_counter() - ti)
        iter_steps.append(lifetime_env_steps(result) - steps0 - sum(iter_steps))
        progress("timed")
        if lifetime_env_steps(result) - steps0 >= args.steps:
            break
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    helper_cpu1, helper_rss, n_helpers = helpers_cpu_rss()
    snap1 = probe.snapshot()
    steps = lifetime_env_steps(result) - steps0
    trained1 = module_steps_trained(result)
    rss_now, rss_peak = rss_mib()

    updates = {pid: snap1["steps"].get(pid, 0) - snap0["steps"].get(pid, 0) for pid in POLICIES}
    updates_rllib = {pid: (trained1[pid] - trained0[pid]) / TRAIN_BATCH for pid in POLICIES}
    upd_mean = float(np.mean(list(updates.values())))
    own = {
        label: {
            "seconds": snap1["seconds"][label] - snap0["seconds"].get(label, 0.0),
            "calls": snap1["calls"][label] - snap0["calls"].get(label, 0),
        }
        for label in snap1["seconds"]
    }
    # Whatever the wrapped calls do not cover (RLlib's training loop, result/metrics
    # compilation, connectors outside sample()): its ms_per_call is per training iteration.
    own["other: RLlib loop + metrics (per iteration)"] = {
        "seconds": wall - sum(v["seconds"] for v in own.values()),
        "calls": len(iter_times),
    }
    for v in own.values():
        v["share_of_wall"] = v["seconds"] / wall
        v["ms_per_call"] = 1e3 * v["seconds"] / max(v["calls"], 1)
    rllib_timers = {k: 1e3 * float(v) for k, v in result.get("timers", {}).items()
                    if isinstance(v, (int, float))}

    out = {
        "benchmark": "rllib_pursuit",
        "quick": args.quick,
        "ray": ray.__version__,
        "torch": torch.__version__,
        "gymnasium": __import__("gymnasium").__version__,
        "pettingzoo": __import__("pettingzoo").__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "torch_threads": torch.get_num_threads(),
        "threads_arg": args.threads,
        "model": args.model,
        "params_per_policy": sum(p.numel() for p in algo.learner_group._learner.module[POLICIES[0]].parameters())
        // 2,  # main + target network; this is one copy
        "ray_initialized": ray.is_initialized(),
        "ray_helper_processes": n_helpers,
        "ray_helpers_rss_mib": helper_rss,
        "ray_helpers_cpu_s_in_window": helper_cpu1 - helper_cpu0,
        "process_cpu_s_in_window": cpu,
        "process_cpu_utilisation": cpu / wall,
        "build_s": build_s,
        "warmup_s": warmup_s,
        "window_env_steps": steps,
        "window_wall_s": wall,
        "env_steps_per_s": steps / wall,
        "agent_steps_per_s": N_PURSUERS * steps / wall,
        "updates_per_policy": updates,
        "updates_per_s_per_policy": upd_mean / wall,
        "updates_per_env_step_per_policy": upd_mean / steps,
        "updates_per_policy_rllib_metric": updates_rllib,
        "updates_counted_by": (
            "optimizer.step() post-hook per policy (primary); cross-check: RLlib learner metric "
            "num_module_steps_trained_lifetime / 32"
        ),
        "iterations": len(iter_times),
        "iteration_env_steps": iter_steps,
        "iteration_ms_mean": 1e3 * float(np.mean(iter_times)),
        "iteration_ms": [1e3 * x for x in iter_times],
        "training_step_ms": 1e3 * wall / max(steps / FRAGMENT, 1),  # one sample(4) + one update round
        "own_timers": own,
        # RLlib's timers are EMA-smoothed per-call means over the whole run (warm-up and the
        # first, slow, learner steps included), as reported by the last algo.train().
        "rllib_timers_ms": rllib_timers,
        "target_updates_lifetime": {
            pid: result.get("learners", {}).get(pid, {}).get("num_target_updates") for pid in POLICIES
        },
        "epsilon_env_steps_lifetime": lifetime_env_steps(result),
        "rss_mib": rss_now,
        "peak_rss_mib": rss_peak,
        "settings": {
            "pursuit": PURSUIT_KWARGS,
            "lr": LR, "train_batch_per_policy": TRAIN_BATCH, "capacity_env_steps": CAPACITY,
            "alpha": ALPHA, "beta": BETA, "gamma": GAMMA, "target_update_env_steps": TARGET_UPDATE,
            "rollout_fragment_length": FRAGMENT, "learning_starts": LEARNING_STARTS,
            "training_intensity": TRAIN_BATCH / FRAGMENT, "rr_weights": rr, "epsilon": EPSILON,
            "grad_clip_global_norm": GRAD_CLIP, "iter_steps": args.iter_steps,
        },
        "unmatched": UNMATCHED,
    }
    algo.stop()

    agree = all(abs(updates[p] - updates_rllib[p]) <= 1 for p in POLICIES)
    out["update_counts_agree"] = agree
    print(json.dumps(out))
    print()
    print(f"| RLlib {out['ray']} DQN x{N_PURSUERS}, Pursuit | value |")
    print("|---|---|")
    rows = [
        ("torch / threads", f"{out['torch']} / {out['torch_threads']}"),
        ("model", f"{args.model} ({out['params_per_policy']} params/policy)"),
        ("env steps/s", f"{out['env_steps_per_s']:.1f}"),
        ("updates/s per policy", f"{out['updates_per_s_per_policy']:.2f}"),
        ("updates per env step per policy", f"{out['updates_per_env_step_per_policy']:.3f} (target 0.25)"),
        ("training iteration", f"{out['iteration_ms_mean']:.0f} ms for ~{int(np.mean(iter_steps))} env steps"),
        ("training_step (4 env steps + 1 update)", f"{out['training_step_ms']:.1f} ms"),
        ("peak RSS (this process)", f"{rss_peak:.0f} MiB"),
        ("CPU use of this process in window", f"{100 * out['process_cpu_utilisation']:.0f}% of one core"),
        ("Ray helper processes", f"{n_helpers}, {helper_rss:.0f} MiB RSS, "
                                 f"{out['ray_helpers_cpu_s_in_window']:.1f} CPU s in window"),
    ]
    for label, v in sorted(own.items()):
        rows.append((f"own: {label}", f"{100 * v['share_of_wall']:.0f}% of wall, {v['ms_per_call']:.2f} ms/call"))
    for key in ("env_runner_sampling_timer", "replay_buffer_add_data_timer", "replay_buffer_sampling_timer",
                "learner_update_timer", "replay_buffer_update_prios_timer", "synch_weights"):
        if key in rllib_timers:
            rows.append((f"rllib timer (EMA): {key}", f"{rllib_timers[key]:.2f} ms/call"))
    for label, v in rows:
        print(f"| {label} | {v} |")
    print()
    print(f"window: {steps} env steps in {wall:.1f} s over {len(iter_times)} iterations; "
          f"updates per policy {sorted(set(updates.values()))} (hook) vs "
          f"{sorted(set(updates_rllib.values()))} (RLlib metric / 32): {'agree' if agree else 'DISAGREE'}")
    print("not matched exactly:")
    for k, v in UNMATCHED.items():
        print(f"  - {k}: {v}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
