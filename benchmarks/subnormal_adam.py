"""Adam's step on a trained run's moments with subnormal floats kept (IEEE) against flushed
to zero (``relayrl.nets.subnormals.optimizer_step``, how relayrl steps), in one process.

    python benchmarks/subnormal_adam.py CHECKPOINT_DIR [--steps 20] [--rounds 5]

Reads every Adam state of the checkpoint's ``state.safetensors`` (each policy's optimisers:
a DQN team's, MASAC's actor and critic), counts its subnormal moments, and steps a fused
Adam of the checkpoint's step count over those moments. A weight whose moment is subnormal
has had zero gradients for hundreds of steps, so the gradients are zero there and small
Gaussians elsewhere. The two sides alternate rounds; each keeps its best round. Reported
per optimiser: the subnormal share, milliseconds per step on each side, their ratio, and
whether the weights after the steps are equal to the bit.
"""

import argparse
import re
import time
from collections import defaultdict
from pathlib import Path

import torch
from safetensors.torch import load_file

from relayrl.nets.subnormals import optimizer_step

MOMENT = re.compile(r"^/policies/(?P<policy>[^/]+)/algorithm/(?P<optimizer>[^/]*optimizer)/state/(?P<index>\d+)/(?P<kind>exp_avg(_sq)?|step)$")


def optimizer_states(checkpoint: Path) -> dict[str, dict[int, dict[str, torch.Tensor]]]:
    """``policy/optimizer`` -> parameter index -> its ``exp_avg``, ``exp_avg_sq``, ``step``."""
    states: dict[str, dict[int, dict[str, torch.Tensor]]] = defaultdict(lambda: defaultdict(dict))
    for key, tensor in load_file(checkpoint / "state.safetensors").items():
        match = MOMENT.match(key)
        if match:
            states[f"{match['policy']}/{match['optimizer']}"][int(match["index"])][match["kind"]] = tensor
    return states


def subnormal(tensor: torch.Tensor) -> torch.Tensor:
    return (tensor != 0) & (tensor.abs() < torch.finfo(tensor.dtype).tiny)


def stepper(moments: dict[int, dict[str, torch.Tensor]], flush: bool, seed: int):
    """A fused Adam over fresh weights shaped as ``moments``, its state theirs; returns a call
    that takes one step (relayrl's flushed ``optimizer_step`` where ``flush``) and the weights."""
    generator = torch.Generator().manual_seed(seed)
    params, grads = [], []
    for index in sorted(moments):
        m = moments[index]
        params.append(torch.nn.Parameter(torch.randn(m["exp_avg"].shape, generator=generator) * 0.05))
        live = ~subnormal(m["exp_avg"]) & (m["exp_avg"] != 0)
        grads.append(torch.randn(m["exp_avg"].shape, generator=generator) * 1e-3 * live)
    optimizer = torch.optim.Adam(params, lr=1e-4, fused=True)
    for p, g, index in zip(params, grads, sorted(moments)):
        m = moments[index]
        step = m.get("step", torch.tensor(1000.0)).to(torch.float32).reshape(())
        optimizer.state[p] = {"step": step.clone(), "exp_avg": m["exp_avg"].clone(), "exp_avg_sq": m["exp_avg_sq"].clone()}
        p.grad = g

    def step() -> None:
        optimizer_step(optimizer) if flush else optimizer.step()

    return step, params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{args.checkpoint}; torch {torch.__version__}, 1 thread; {args.steps} steps per round, best of {args.rounds} rounds\n")
    print("| optimiser | moments | subnormal | kept (ms/step) | flushed (ms/step) | kept / flushed | weights equal |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, moments in optimizer_states(args.checkpoint).items():
        total = sum(m["exp_avg"].numel() + m["exp_avg_sq"].numel() for m in moments.values())
        tiny = sum(int(subnormal(m["exp_avg"]).sum() + subnormal(m["exp_avg_sq"]).sum()) for m in moments.values())
        best = {False: float("inf"), True: float("inf")}
        weights = {}
        for _ in range(args.rounds):
            for flush in (False, True):
                step, params = stepper(moments, flush, seed=0)
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                best[flush] = min(best[flush], (time.perf_counter() - start) / args.steps)
                weights[flush] = [p.detach().clone() for p in params]
        same = all(torch.equal(a, b) for a, b in zip(weights[False], weights[True]))
        print(f"| {name} | {total:,} | {tiny / total:.1%} | {best[False] * 1e3:.2f} | {best[True] * 1e3:.2f} | "
              f"{best[False] / best[True]:.1f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
