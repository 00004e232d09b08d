"""Training speed of ``precision: bfloat16`` against ``float32`` (``relayrl.nets.precision``),
per learner kind, in one process: the two runs of a preset (one per precision) are built
side by side, trained past their first updates, then continued in alternating chunks
(this VM's speed drifts between processes and over minutes, so only alternation in one
process resolves a 1.2-2x change). Reported: the median env steps per CPU second of each
side over the chunks with its range, and the median milliseconds per update (the run's
update section over its updates). First, the products alone: a stacked layer's batched
product and Battle's convolutions, forward and backward, float32 against bfloat16 inputs.

    python benchmarks/bfloat16_products.py [--chunks 5] [--presets pursuit-ddqn ...]

The CPU must multiply bfloat16 in hardware (AVX512-BF16 or AMX); elsewhere the runs warn
and bfloat16 is slower.
"""

import argparse
import time
from collections.abc import Callable

import torch

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


def cpu_ms(call: Callable[[], object], calls: int = 30) -> float:
    call()
    start = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - start) / calls * 1000


def products() -> None:
    """Forward and backward of the products alone, each shape in both dtypes, alternating."""
    torch.set_num_threads(1)
    shapes = {  # [P, B, in] x [P, in, out]: MASAC's critics at the Arena's batch, Pursuit's first DQN layer
        "6 sets x 800 rows, 256 -> 256 (navigation-masac's critics)": (6, 800, 256, 256),
        "8 sets x 32 rows, 1,024 -> 64 (pursuit-ddqn's first layer)": (8, 32, 1024, 64),
        "8 sets x 1,024 rows, 1,216 -> 64 (pursuit-maddpg's critics)": (8, 1024, 1216, 64),
    }
    print("| product, forward and backward | float32 ms | bfloat16 ms | ratio |")
    print("|---|---:|---:|---:|")
    for name, (p, b, i, o) in shapes.items():
        x, w = torch.randn(p, b, i), torch.randn(p, i, o, requires_grad=True)
        ms = {}
        for dtype in (torch.float32, torch.bfloat16):
            xs, ws = x.to(dtype), w.detach().to(dtype).requires_grad_()
            ms[dtype] = cpu_ms(lambda: torch.bmm(xs, ws).sum().backward())
        print(f"| {name} | {ms[torch.float32]:.2f} | {ms[torch.bfloat16]:.2f} | {ms[torch.float32] / ms[torch.bfloat16]:.2f}x |")
    convs = torch.nn.Sequential(torch.nn.Conv2d(30, 192, 2, groups=6), torch.nn.ReLU(), torch.nn.Conv2d(192, 384, 2, groups=6), torch.nn.ReLU(),
                                torch.nn.Conv2d(384, 384, 2, groups=6))
    screens = torch.randn(32, 30, 13, 13).contiguous(memory_format=torch.channels_last)
    ms = {}
    for dtype in (torch.float32, torch.bfloat16):
        net = convs.to(dtype).to(memory_format=torch.channels_last)
        ms[dtype] = cpu_ms(lambda: net(screens.to(dtype)).float().sum().backward(), 10)
    print(f"| battle's convolutions: 6 sets x 32 screens 13x13x5, 2x2 kernels of 32, 64, 64 | {ms[torch.float32]:.2f} | "
          f"{ms[torch.bfloat16]:.2f} | {ms[torch.float32] / ms[torch.bfloat16]:.2f}x |")
    print()


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
    products()
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
