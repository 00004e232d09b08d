"""Batched learner scaling: N agents' DQN updates in one stacked call (SPEC §1.1 network,
double-Q target, PER weights, Adam, per-agent clip), against two baselines in the same run:
one network updated on the combined batch N x 32, and N separate single-agent updates."""

import numpy as np
import torch

from relayrl.algos.dqn import DQN
from relayrl.algos.sections import DQNConfig
from relayrl.nets.model_config import ModelConfig
from relayrl.bench.common import best_of_rounds, markdown_table
from relayrl.core.device import configure_threads

OBS_SHAPE = (7, 7, 3)
N_ACTIONS = 5
BATCH = 32
TARGET_VS_COMBINED = 1.2


def _learner(n_sets: int, device: torch.device) -> DQN:
    return DQN(n_sets, OBS_SHAPE, N_ACTIONS, DQNConfig(), ModelConfig(), device, seed=0)


def _batch(n_sets: int, batch: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
    lead = (n_sets, batch)
    data = {
        "obs": rng.integers(0, 3, (*lead, *OBS_SHAPE), dtype=np.uint8),
        "next_obs": rng.integers(0, 3, (*lead, *OBS_SHAPE), dtype=np.uint8),
        "action": rng.integers(0, N_ACTIONS, lead).astype(np.uint8),
        "reward": rng.standard_normal(lead).astype(np.float32),
        "discount": np.full(lead, 0.99, np.float32),
    }
    return data, rng.random(lead).astype(np.float32)


def _updater(n_sets: int, batch: int, device: torch.device, rng: np.random.Generator):
    learner = _learner(n_sets, device)
    data, weights = _batch(n_sets, batch, rng)

    def update() -> None:
        learner.update(data, weights)
        if device.type == "cuda":
            torch.cuda.synchronize()

    return update


def _separate(n_agents: int, device: torch.device, rng: np.random.Generator):
    updates = [_updater(1, BATCH, device, rng) for _ in range(n_agents)]

    def update() -> None:
        for u in updates:
            u()

    return update


def run(device: torch.device, quick: bool = False, sizes=(1, 2, 4, 8, 16, 32, 64)) -> tuple[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    rounds = 3 if quick else 5
    rows, results = [], {}
    for n in sizes:
        fns = [_updater(n, BATCH, device, rng), _updater(1, n * BATCH, device, rng), _separate(n, device, rng)]
        calls = [max(2, (40 if quick else 100) // n)] * 3
        batched, combined, separate = best_of_rounds(fns, calls, rounds)
        ratio = batched / combined
        passed = "pass" if ratio <= TARGET_VS_COMBINED else "FAIL"
        rows.append([
            str(n), f"{batched * 1e3:.2f}", f"{combined * 1e3:.2f}", f"{separate * 1e3:.2f}",
            f"{ratio:.2f}x ({passed})", f"{batched / separate:.2f}x", f"{n / batched:,.0f}",
        ])
        results[f"batched_ms_N{n}"] = batched * 1e3
        results[f"ratio_vs_combined_N{n}"] = ratio
        results[f"ratio_vs_separate_N{n}"] = batched / separate
    header = [
        "N agents", "batched (ms)", "1 net, batch N x 32 (ms)", "N separate (ms)",
        f"batched / combined (<= {TARGET_VS_COMBINED}x)", "batched / separate", "agent-updates/s",
    ]
    return markdown_table(header, rows), results


def thread_comparison(quick: bool = False) -> tuple[str, dict[str, float]]:
    """8-agent update and 8x16 act on CPU with 1 and 2 torch threads (the loop's settings)."""
    rng = np.random.default_rng(1)
    rows, results = [], {}
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            configure_threads(threads)
            update = _updater(8, BATCH, torch.device("cpu"), rng)
            learner = _learner(8, torch.device("cpu"))
            obs = rng.integers(0, 3, (8, 16, *OBS_SHAPE), dtype=np.uint8)
            index = torch.arange(64)
            source = torch.randn(4096, 16)
            fns = [update, lambda: learner.act(obs, None, 0.0), lambda: source.index_select(0, index)]
            seconds = best_of_rounds(fns, [10 if quick else 30, 50, 2000], 3)
            rows.append([str(threads), f"{seconds[0] * 1e3:.2f}", f"{seconds[1] * 1e3:.3f}", f"{seconds[2] * 1e6:.1f}"])
            results[f"update_ms_threads{threads}"] = seconds[0] * 1e3
    finally:
        configure_threads(before)
    table = markdown_table(["torch threads", "8-agent update (ms)", "act 8 x 16 obs (ms)", "index_select 64 rows (us)"], rows)
    return table, results
