"""Replay layer speed vs cpprb, measured in the same run on the same machine.

Setting (Pursuit): capacity 120_000 per agent; fields obs/next_obs uint8 (7, 7, 3), action
uint8, reward float32, discount float32. Training adds 4 transitions per agent per iteration,
then samples once and updates the sampled priorities.

Timing: ours and cpprb alternate in rounds; each round times a block of calls with
time.perf_counter and keeps the block mean; the table shows the best (minimum) round of each,
which is the least disturbed by other processes on a shared machine, and the ratio of the two.

    relayrl bench --only replay
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version

import numpy as np

import cpprb

from relayrl.replay import FieldSpec, ReplayBuffer

CAPACITY = 120_000
FIELDS = {
    "obs": FieldSpec((7, 7, 3), np.uint8),
    "next_obs": FieldSpec((7, 7, 3), np.uint8),
    "action": FieldSpec((), np.uint8),
    "reward": FieldSpec((), np.float32),
    "discount": FieldSpec((), np.float32),
}
CPPRB_ENV = {name: {"shape": spec.shape or 1, "dtype": spec.dtype} for name, spec in FIELDS.items()}
ALPHA, BETA = 0.6, 0.4


@dataclass
class Row:
    op: str
    setting: str
    ours_us: float
    cpprb_us: float
    target: float | None  # None: reported for information, no target

    @property
    def ratio(self) -> float:
        return self.ours_us / self.cpprb_us

    @property
    def passed(self) -> bool:
        return self.target is None or self.ratio <= self.target


def transitions(rng: np.random.Generator, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Random transitions with leading shape ``lead`` (e.g. (P, M) or (M,))."""
    out = {}
    for name, spec in FIELDS.items():
        shape = lead + spec.shape
        if np.dtype(spec.dtype) == np.uint8:
            out[name] = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            out[name] = rng.random(shape, dtype=np.float32)
    return out


def cpprb_rows(batch: dict[str, np.ndarray], p: int | None) -> dict[str, np.ndarray]:
    """Agent p's rows of a [P, M, ...] batch (or the [M, ...] batch itself) in cpprb's layout."""
    rows = {name: (a[p] if p is not None else a) for name, a in batch.items()}
    return {name: (a[:, None] if FIELDS[name].shape == () else a) for name, a in rows.items()}


def compare(ours: Callable[[], object], theirs: Callable[[], object], calls: int, rounds: int) -> tuple[float, float]:
    """Best-of-rounds block-mean time per call, in microseconds, for each callable."""
    best = [np.inf, np.inf]
    ours(), theirs()  # warm caches and lazy allocations
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for i, fn in enumerate((ours, theirs)):
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                best[i] = min(best[i], (time.perf_counter() - start) / calls * 1e6)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best[0], best[1]


def fill(ours: ReplayBuffer, theirs: list, rng: np.random.Generator, chunk: int = 10_000) -> None:
    n_agents = ours.n_buffers
    for _ in range(-(-CAPACITY // chunk)):
        batch = transitions(rng, (n_agents, chunk))
        ours.add(batch)
        for p, rb in enumerate(theirs):
            rb.add(**cpprb_rows(batch, p))


def bench_adds(ours: ReplayBuffer, theirs: list, name: str, setting: str, rounds: int, rng: np.random.Generator) -> list[Row]:
    """Adding fragments of 4 and of 1,000 rows per agent: one call for relayrl's N agents, a
    call per agent's cpprb buffer."""
    n_agents = len(theirs)
    rows: list[Row] = []
    for m, calls in ((4, 300), (1000, 10)):
        frag = transitions(rng, (n_agents, m))
        per_agent = [cpprb_rows(frag, p) for p in range(n_agents)]

        def add_theirs(per_agent=per_agent) -> None:
            for rb, kw in zip(theirs, per_agent):
                rb.add(**kw)

        t = compare(lambda frag=frag: ours.add(frag), add_theirs, calls, rounds)
        rows.append(Row(name, f"{setting}, {m} rows each", *t, 1.0))
    return rows


def bench_uniform(n_agents: int, quick: bool, rng: np.random.Generator) -> list[Row]:
    rows: list[Row] = []
    rounds = 5 if quick else 15
    ours = ReplayBuffer(n_agents, CAPACITY, FIELDS, seed=0)
    theirs = [cpprb.ReplayBuffer(CAPACITY, CPPRB_ENV) for _ in range(n_agents)]
    setting = f"{n_agents} agent" + ("s" if n_agents > 1 else "")
    fill(ours, theirs, rng)
    rows += bench_adds(ours, theirs, "add (uniform)", setting, rounds, rng)
    for batch in (32, 256):

        def sample_theirs(batch=batch) -> None:
            for rb in theirs:
                rb.sample(batch)

        t = compare(lambda batch=batch: ours.sample(batch), sample_theirs, 300 if batch == 32 else 100, rounds)
        rows.append(Row("sample (uniform)", f"{setting}, batch {batch}", *t, 1.0))
    return rows


def bench_per(n_agents: int, quick: bool, rng: np.random.Generator) -> list[Row]:
    rows: list[Row] = []
    rounds = 5 if quick else 15
    ours = ReplayBuffer(n_agents, CAPACITY, FIELDS, prioritized=True, alpha=ALPHA, beta=BETA, seed=0)
    theirs = [cpprb.PrioritizedReplayBuffer(CAPACITY, CPPRB_ENV, alpha=ALPHA) for _ in range(n_agents)]
    setting = f"{n_agents} agent" + ("s" if n_agents > 1 else "")
    fill(ours, theirs, rng)
    # Spread the priorities so that the trees are not uniform.
    pool = [np.abs(rng.standard_normal((n_agents, 256))) * 2.0 for _ in range(16)]
    spread = np.abs(rng.standard_normal((n_agents, CAPACITY)))
    idx = np.broadcast_to(np.arange(CAPACITY), (n_agents, CAPACITY))
    ours.update_priorities(idx, spread)
    for p, rb in enumerate(theirs):
        rb.update_priorities(np.arange(CAPACITY), spread[p])

    rows += bench_adds(ours, theirs, "add (PER)", setting, rounds, rng)

    for batch in (32, 256):
        step = {"i": 0}

        def ours_su(batch=batch) -> None:
            step["i"] += 1
            s = ours.sample(batch)
            ours.update_priorities(s.indices, pool[step["i"] % 16][:, :batch])

        def theirs_su(batch=batch) -> None:
            step["i"] += 1
            new = pool[step["i"] % 16]
            for p, rb in enumerate(theirs):
                s = rb.sample(batch, beta=BETA)
                rb.update_priorities(s["indexes"], new[p, :batch])

        target = (2.0 if batch == 32 else 1.5) if n_agents == 1 else 1.0
        calls = 200 if batch == 32 else 60
        t = compare(ours_su, theirs_su, calls, rounds)
        rows.append(Row("PER sample+update", f"{setting}, batch {batch}", *t, target))

        def sample_theirs(batch=batch) -> None:
            for rb in theirs:
                rb.sample(batch, beta=BETA)

        t = compare(lambda batch=batch: ours.sample(batch), sample_theirs, calls, rounds)
        rows.append(Row("PER sample only", f"{setting}, batch {batch}", *t, None))

        # What training does per iteration: insert 4 steps per agent, then sample + update.
        frag = transitions(rng, (n_agents, 4))
        per_agent = [cpprb_rows(frag, p) for p in range(n_agents)]

        def ours_step(batch=batch, frag=frag) -> None:
            ours.add(frag)
            ours_su(batch)

        def theirs_step(batch=batch, per_agent=per_agent) -> None:
            for rb, kw in zip(theirs, per_agent):
                rb.add(**kw)
            theirs_su(batch)

        t = compare(ours_step, theirs_step, calls, rounds)
        rows.append(Row("PER train step (add 4 + sample + update)", f"{setting}, batch {batch}", *t, None))
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        "| operation | setting | ours (us) | cpprb (us) | ratio | target | result |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        target, result = ("-", "info") if r.target is None else (f"<= {r.target:.1f}x", "pass" if r.passed else "FAIL")
        numbers = f"{r.ours_us:.1f} | {r.cpprb_us:.1f} | {r.ratio:.2f}x"
        lines.append(f"| {r.op} | {r.setting} | {numbers} | {target} | {result} |")
    return "\n".join(lines)


def run(quick: bool = False) -> tuple[str, bool]:
    """The replay table (1 and 8 agents) and whether every target passed."""
    rng = np.random.default_rng(0)
    rows: list[Row] = []
    for n_agents in (1, 8):
        rows += bench_uniform(n_agents, quick, rng)
        gc.collect()
        rows += bench_per(n_agents, quick, rng)
        gc.collect()
    note = (
        f"Capacity {CAPACITY:,} per agent, Pursuit fields, cpprb {version('cpprb')}; "
        "8-agent rows: one batched call of ours vs a loop over 8 cpprb buffers."
    )
    return f"{note}\n\n{table(rows)}", all(r.passed for r in rows)
