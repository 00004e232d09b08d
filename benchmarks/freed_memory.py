"""Training speed with and without ``keep_freed_memory`` (``relayrl.core.memory``), per
learner: each preset trains in its own process with the setting on and off, alternating
over ``--rounds`` rounds (the setting is the process's, so the two cannot share one): the
median env steps per CPU second of each side with its range, and the median page faults
per update (the kernel's minor faults of the timed part over its updates), which do not
drift with the machine's speed.

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
    "battle-pretrain": (400, 400, ["dqn.learning_starts=200"]),
}

ONE_RUN = """
import json, resource, sys, time
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
    start, faults = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    seconds, env_steps, updates = timed_training(run, warm + steps)
    cpu, faults = time.process_time() - start, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
finally:
    run.close()
print(json.dumps({"sps": env_steps / cpu, "faults_per_update": faults / max(updates, 1)}))
"""


def one_run(preset: str, keep: bool) -> tuple[float, float]:
    """Env steps per CPU second and page faults per update of one timed run."""
    warm, steps, overrides = PRESETS[preset]
    cmd = [sys.executable, "-c", ONE_RUN, preset, str(warm), str(steps), "on" if keep else "off", *overrides]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["sps"]), float(result["faults_per_update"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    args = parser.parse_args()
    print("| preset | env steps/CPU s, default malloc | kept memory | ratio of medians | page faults per update, default | kept |")
    print("|---|---:|---:|---:|---:|---:|")
    for preset in args.presets:
        rates: dict[bool, list[float]] = {False: [], True: []}
        faults: dict[bool, list[float]] = {False: [], True: []}
        for k in range(args.rounds):
            for keep in (k % 2 == 0, k % 2 == 1):  # alternate which side runs first
                sps, per_update = one_run(preset, keep)
                rates[keep].append(sps)
                faults[keep].append(per_update)
        median = {keep: sorted(r)[len(r) // 2] for keep, r in rates.items()}
        spans = {keep: f"{median[keep]:,.0f} ({min(r):,.0f}-{max(r):,.0f})" for keep, r in rates.items()}
        pages = {keep: f"{sorted(f)[len(f) // 2]:,.0f}" for keep, f in faults.items()}
        print(f"| {preset} | {spans[False]} | {spans[True]} | {median[True] / median[False]:.2f}x | {pages[False]} | {pages[True]} |", flush=True)


if __name__ == "__main__":
    main()
