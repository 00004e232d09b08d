"""Training speed with and without ``keep_freed_memory`` (``relayrl.core.memory``), per
learner: each preset trains in its own process with the setting on and off, alternating
over ``--rounds`` rounds (the setting is the process's, so the two cannot share one), and
the median env steps per CPU second of each side is reported with its range.

    python benchmarks/freed_memory.py [--rounds 3] [--presets spread-qmix-jaxmarl ...]
"""

import argparse
import json
import subprocess
import sys

# preset -> (warm-up env steps, timed env steps, overrides): the warm-up reaches the first updates
PRESETS: dict[str, tuple[int, int, list[str]]] = {
    "spread-qmix-jaxmarl": (4_000, 12_000, []),
    "spread-mappo-jaxmarl": (2_048, 6_144, []),
    "pursuit-maddpg": (4_000, 3_000, ["centralised.random_steps=2000"]),
    "lbf-8x8-2p-2f-seac": (2_000, 20_000, []),
    "halfcheetah-dase-td3": (3_000, 3_000, ["actor_critic.random_steps=1000"]),
}

ONE_RUN = """
import json, sys, time
import torch
from relayrl.bench.common import timed_training
from relayrl.experiment import build_config, build_run
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.presets import preset_dict

preset, warm, steps, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "on"
config = apply_overrides(preset_dict(preset), sys.argv[5:])
config.update({"preset": "freed-memory", "total_steps": warm, "report_interval": warm, "eval": {"interval": 0},
               "checkpoint_interval": 10**9, "device": "cpu", "keep_freed_memory": keep})
run = build_run(build_config(config), None, verbose=False)
try:
    run.train()
    start = time.process_time()
    seconds, env_steps, updates = timed_training(run, warm + steps)
    cpu = time.process_time() - start
finally:
    run.close()
print(json.dumps({"sps": env_steps / cpu, "updates": updates}))
"""


def one_run(preset: str, keep: bool) -> float:
    warm, steps, overrides = PRESETS[preset]
    cmd = [sys.executable, "-c", ONE_RUN, preset, str(warm), str(steps), "on" if keep else "off", *overrides]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["sps"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    args = parser.parse_args()
    print("| preset | env steps/CPU s, default malloc | kept memory | ratio of medians |")
    print("|---|---:|---:|---:|")
    for preset in args.presets:
        rates: dict[bool, list[float]] = {False: [], True: []}
        for k in range(args.rounds):
            for keep in (k % 2 == 0, k % 2 == 1):  # alternate which side runs first
                rates[keep].append(one_run(preset, keep))
        median = {keep: sorted(r)[len(r) // 2] for keep, r in rates.items()}
        spans = {keep: f"{median[keep]:,.0f} ({min(r):,.0f}-{max(r):,.0f})" for keep, r in rates.items()}
        print(f"| {preset} | {spans[False]} | {spans[True]} | {median[True] / median[False]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
