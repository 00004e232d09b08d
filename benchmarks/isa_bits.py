"""Which instruction-set limits change the bits of one Battle Q-network update on this machine.

    python benchmarks/isa_bits.py [--threads 1 2]

Loads red's kept networks (``docs/results/super/runs/battle-pretrain-1960e841``: 6 agents,
13x13x5 observations, 21 actions), runs one forward and backward on a fixed batch of 32
observations per agent, and prints a digest of the Q-values and of the gradients under each
setting, each in its own process (the limits are read when the libraries load). Equal
digests: the same bits. What differs here differs between machines offering those
instruction sets (benchmarks/README.md, ``same_numbers.py``).
"""

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

NETWORKS = Path(__file__).resolve().parent.parent / "docs/results/super/runs/battle-pretrain-1960e841/0/policies/step_0000300000/policy.safetensors"
SETTINGS = [
    {},
    {"DNNL_MAX_CPU_ISA": "SSE41"},
    {"DNNL_MAX_CPU_ISA": "AVX"},
    {"DNNL_MAX_CPU_ISA": "AVX2"},
    {"ATEN_CPU_CAPABILITY": "default"},
    {"MKL_CBWR": "COMPATIBLE"},
    {"MKL_CBWR": "AVX2"},
]


def digests(threads: int) -> str:
    """Runs in the child: the digests of one update's Q-values and gradients."""
    import torch
    from safetensors.torch import load_file

    from relayrl.nets.qnetwork import QNetwork

    torch.set_num_threads(threads)
    net = QNetwork(6, (13, 13, 5), 21)
    net.load_state_dict({name.split("/online/")[1]: value for name, value in load_file(str(NETWORKS)).items()})
    obs = torch.rand(6, 32, 13, 13, 5, generator=torch.Generator().manual_seed(0))
    q = net(obs)
    q.pow(2).mean().backward()
    grads = torch.cat([p.grad.reshape(-1) for p in net.parameters()])

    def digest(t: torch.Tensor) -> str:
        return hashlib.sha256(t.detach().contiguous().numpy().tobytes()).hexdigest()[:12]

    return f"{torch.backends.cpu.get_cpu_capability()} | {digest(q)} | {digest(grads)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(digests(args.child))
        return 0
    print("| threads | limit | torch capability | Q-values | gradients |\n|---:|---|---|---|---|")
    for threads in args.threads:
        for setting in SETTINGS:
            env = {**os.environ, **setting}
            child = [sys.executable, __file__, "--child", str(threads)]
            out = subprocess.run(child, env=env, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            limit = ", ".join(f"{k}={v}" for k, v in setting.items()) or "none"
            print(f"| {threads} | {limit} | {out} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
