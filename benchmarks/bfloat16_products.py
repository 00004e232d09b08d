"""Training speed of ``precision: bfloat16`` against ``float32`` (``relayrl.nets.precision``),
per learner kind, in one process: the two runs of a preset (one per precision) are built
side by side, trained past their first updates, then continued in alternating chunks
(this VM's speed drifts between processes and over minutes, so only alternation in one
process resolves a 1.2-2x change). Reported: the median env steps per CPU second of each
side over the chunks with its range, and the median milliseconds per update (the run's
update section over its updates).

    python benchmarks/bfloat16_products.py [--chunks 5] [--presets pursuit-ddqn ...]

The CPU must multiply bfloat16 in hardware (AVX512-BF16 or AMX); elsewhere the runs warn
and bfloat16 is slower.
"""

import argparse
import time

from relayrl.bench.common import timed_training
from relayrl.experiment import build_config, build_run
from relayrl.experiment.overrides import apply_overrides
from relayrl.experiment.presets import preset_dict

# preset -> (warm-up env steps, env steps per timed chunk, overrides): the warm-up reaches the
# first updates; replays shrunk so that two runs fit beside the background training
PRESETS: dict[str, tuple[int, int, list[str]]] = {
    "pursuit-ddqn": (1_500, 1_000, ["dqn.buffer_size=20000"]),
    "battle-pretrain": (400, 200, ["dqn.learning_starts=200", "dqn.buffer_size=5000"]),
    "navigation-masac": (1_200, 400, ["centralised.random_steps=800", "centralised.buffer_size=20000"]),
    "pursuit-maddpg": (2_500, 1_000, ["centralised.random_steps=2000", "centralised.buffer_size=20000"]),
    "halfcheetah-dase-td3": (1_500, 500, ["actor_critic.random_steps=1000", "actor_critic.buffer_size=20000"]),
    "spread-mappo-jaxmarl": (2_048, 2_048, []),
    "spread-qmix-jaxmarl": (4_000, 4_000, []),
    "pong-ppo": (1_152, 1_152, []),
}


def build(preset: str, precision: str, warm: int, overrides: list[str]):
    config = apply_overrides(preset_dict(preset), overrides)
    config.update({"preset": f"bf16-{precision}", "total_steps": warm, "report_interval": warm, "eval": {"interval": 0},
                   "checkpoint_interval": 10**9, "device": "cpu", "precision": precision})
    run = build_run(build_config(config), None, verbose=False)
    run.train()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    args = parser.parse_args()
    print("| preset | env steps/CPU s, float32 | bfloat16 | ratio of medians | ms per update, float32 | bfloat16 | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for preset in args.presets:
        warm, chunk, overrides = PRESETS[preset]
        runs = {p: build(preset, p, warm, overrides) for p in ("float32", "bfloat16")}
        rates: dict[str, list[float]] = {p: [] for p in runs}
        per_update: dict[str, list[float]] = {p: [] for p in runs}
        try:
            for k in range(args.chunks):
                order = ("float32", "bfloat16") if k % 2 == 0 else ("bfloat16", "float32")
                for p in order:
                    run = runs[p]
                    run.timer.reset()
                    start = time.process_time()
                    _, env_steps, updates = timed_training(run, run.counters.env_steps + chunk)
                    rates[p].append(env_steps / (time.process_time() - start))
                    per_update[p].append(1000 * run.timer.seconds.get("update", 0.0) / max(updates, 1))
        finally:
            for run in runs.values():
                run.close()
        rate = {p: sorted(r)[len(r) // 2] for p, r in rates.items()}
        ms = {p: sorted(u)[len(u) // 2] for p, u in per_update.items()}
        spans = {p: f"{rate[p]:,.0f} ({min(r):,.0f}-{max(r):,.0f})" for p, r in rates.items()}
        print(
            f"| {preset} | {spans['float32']} | {spans['bfloat16']} | {rate['bfloat16'] / rate['float32']:.2f}x "
            f"| {ms['float32']:.1f} | {ms['bfloat16']:.1f} | {ms['float32'] / ms['bfloat16']:.2f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
