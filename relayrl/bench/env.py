"""Vectorised Pursuit vs PettingZoo's pursuit_v5, same settings (SPEC §3), same run.

Baseline: one PettingZoo parallel env stepped with dict actions (its native API), reset when
the game ends. Ours: PursuitVectorEnv at E copies. Both take uniformly random actions; env
steps/s count one game advancing one cycle.
"""

import numpy as np

from relayrl.bench.common import best_of_rounds, markdown_table
from relayrl.envs.pursuit import make_pursuit
from relayrl.envs.pursuit_vector import PursuitVectorEnv

TARGET_RATIO_AT_64 = 100.0


def _pettingzoo_stepper(seed: int):
    env = make_pursuit()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def step() -> None:
        actions = {agent: int(a) for agent, a in zip(env.agents, rng.integers(0, 5, len(env.agents)))}
        env.step(actions)
        if not env.agents:
            env.reset()

    return step


def _vector_stepper(num_envs: int, seed: int):
    venv = PursuitVectorEnv(num_envs)
    venv.reset(seed)
    rng = np.random.default_rng(seed)
    actions = [rng.integers(0, 5, (num_envs, venv.N)) for _ in range(16)]
    count = {"i": 0}

    def step() -> None:
        count["i"] += 1
        venv.step([actions[count["i"] % 16]])

    return step


def run(quick: bool = False) -> tuple[str, dict[str, float]]:
    sizes = (1, 16, 64, 256)
    rounds = 3 if quick else 7
    pz = _pettingzoo_stepper(0)
    ours = [_vector_stepper(e, 0) for e in sizes]
    calls = [50 if quick else 150] + [max(4, (400 if quick else 1200) // e) for e in sizes]
    seconds = best_of_rounds([pz, *ours], calls, rounds)
    pz_sps = 1.0 / seconds[0]
    rows = [["PettingZoo pursuit_v5 (baseline)", "1", f"{pz_sps:,.0f}", "1.0x", ""]]
    results = {"pettingzoo_sps": pz_sps}
    for e, s in zip(sizes, seconds[1:]):
        sps = e / s
        ratio = sps / pz_sps
        target = f">= {TARGET_RATIO_AT_64:.0f}x: {'pass' if ratio >= TARGET_RATIO_AT_64 else 'FAIL'}" if e == 64 else ""
        rows.append(["relayrl vectorised pursuit", str(e), f"{sps:,.0f}", f"{ratio:,.1f}x", target])
        results[f"vector_sps_E{e}"] = sps
    results["ratio_at_64"] = results["vector_sps_E64"] / pz_sps
    table = markdown_table(["implementation", "E", "env steps/s", "vs PettingZoo", "target"], rows)
    return table, results
