"""DASE's cost over a single agent (paper 001, appendix E): wall time and memory of DASE
with K agents against single-agent TD3 at equal env steps per agent, through the run
(env steps, replay, DPS weights and the batched update of all K agents).

Each configuration runs in its own process (so peak memory is its own); rounds alternate
the configurations, so machine load affects them alike. Prints the median seconds per
1000 learning steps (after the random start, evaluation off) and the ratio to the
baseline, plus peak resident memory.

    python benchmarks/dase_overhead.py [--task halfcheetah] [--steps 1500] [--rounds 3] [--device cpu]

The paper's reference implementation measured +165% (processes) and +386% (threads) for
TD3 + DASE with K=2 over TD3 (ratios 2.65 and 4.86, its Table 3).
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = {  # label -> (preset, overrides)
    "TD3 (baseline)": ("{task}-td3", []),
    "DASE-TD3 K=2": ("{task}-dase-td3", []),
    "DASE-TD3 K=5": ("{task}-dase-td3-k5", []),
}


def _child(preset: str, steps: int, device: str) -> None:
    import torch

    from relayrl.experiment import build_run
    from relayrl.experiment.presets import load_preset

    random_steps = 1000
    config = load_preset(preset).model_copy(update={"total_steps": random_steps + 200, "device": device})
    config.actor_critic.random_steps = random_steps
    config.eval.interval = 0
    run = build_run(config, None, verbose=False)
    run.train()  # random start and warm-up updates: not timed
    config.total_steps = random_steps + 200 + steps
    if device != "cpu":
        torch.cuda.synchronize()
    start = time.perf_counter()
    run.train()
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu_mb = torch.cuda.max_memory_allocated() / 2**20 if device != "cpu" else 0.0
    print(json.dumps({"s_per_1000": 1000 * seconds / steps, "peak_rss_mb": peak_mb, "gpu_mb": gpu_mb}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="halfcheetah")
    parser.add_argument("--steps", type=int, default=1500, help="timed env steps per agent")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", nargs="+", help="labels to run (default: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.steps, args.device)
        return
    configs = {k: v for k, v in CONFIGS.items() if not args.only or k in args.only}
    results: dict[str, list[dict[str, float]]] = {label: [] for label in configs}
    for _ in range(args.rounds):
        for label, (preset, _) in configs.items():
            cmd = [sys.executable, __file__, "--child", preset.format(task=args.task), "--steps", str(args.steps), "--device", args.device]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            results[label].append(json.loads(out))
    base = statistics.median(r["s_per_1000"] for r in next(iter(results.values())))
    print(f"task {args.task}, device {args.device}, {args.steps} timed steps per agent, {args.rounds} rounds (medians)")
    print("| configuration | s per 1000 steps per agent | ratio to TD3 | peak RSS (MB) | GPU memory (MB) |")
    print("|---|---:|---:|---:|---:|")
    for label, runs in results.items():
        seconds = statistics.median(r["s_per_1000"] for r in runs)
        rss = max(r["peak_rss_mb"] for r in runs)
        gpu = max(r["gpu_mb"] for r in runs)
        print(f"| {label} | {seconds:.2f} | {seconds / base:.2f} | {rss:.0f} | {gpu:.0f} |")


if __name__ == "__main__":
    main()
