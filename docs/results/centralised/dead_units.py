"""Dead ReLU units in a navigation MASAC run's actors: the share of each agent's hidden units
that output zero for every one of 20,000 observations drawn from the run's replay.

    python docs/results/centralised/dead_units.py RUN_DIR [RUN_DIR ...]

Reads the newest checkpoint's arrays (no code is run from it); the actors are the
stacked MLP of ``relayrl/algos/joint_critics.py`` (two ReLU layers, one parameter set per
agent).
"""

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file


def _array(state: dict, arrays: np.lib.npyio.NpzFile, *path: str) -> np.ndarray:
    node = state
    for key in path:
        node = node["__dict__"][key] if "__dict__" in node else node[key]
    node = node[0] if isinstance(node, list) else node
    return arrays[str(node["__array__"])]


def main() -> None:
    for run in map(Path, sys.argv[1:]):
        checkpoint = sorted((run / "checkpoints").glob("step_*"))[-1]
        weights = load_file(checkpoint / "state.safetensors")
        arrays = np.load(checkpoint / "state.npz")
        state = json.loads((checkpoint / "state.json").read_text())
        size = int(np.ravel(_array(state, arrays, "policies", "agent", "replay", "size"))[0])
        obs = _array(state, arrays, "policies", "agent", "replay", "data", "obs")[:size]
        obs = obs[np.random.default_rng(0).choice(size, min(20_000, size), replace=False)]
        layer = lambda n, part: weights[f"/policies/agent/algorithm/actor/layers.{n}.{part}"]
        shares = []
        for agent in range(obs.shape[1]):
            first = np.maximum(obs[:, agent] @ layer(0, "weight")[agent] + layer(0, "bias")[agent], 0)
            second = np.maximum(first @ layer(1, "weight")[agent] + layer(1, "bias")[agent], 0)
            shares.append(f"{(first.max(0) == 0).mean():.0%} / {(second.max(0) == 0).mean():.0%}")
        print(f"{run} at {checkpoint.name}: dead units per agent (first / second layer): {', '.join(shares)}")


if __name__ == "__main__":
    main()
