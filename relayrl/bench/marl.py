"""``relayrl bench --only marl``: relayrl's QMIX and MAPPO on MPE spread at JaxMARL's
published configs (the presets ``spread-qmix-jaxmarl`` and ``spread-mappo-jaxmarl``, which
give them key by key), beside JaxMARL's own scripts timed in the same run (where a JaxMARL
install is given), with env steps/s, updates/s and samples trained per env step (4.0 on
both sides: one sample is one env step of every agent).

relayrl steps ``simple-spread`` (mpe2's dynamics in NumPy, ``relayrl.envs.spread``);
JaxMARL steps its own JAX MPE. Timing: relayrl trains a warm-up first (start-up, the first
batch, learning start), then the timed steps with its section timer on (the profile
columns: shares of the timed wall clock); JaxMARL's training is compiled first, then the
compiled run is timed (``benchmarks/jaxmarl_timing.py``). JaxMARL's XLA uses every core of
the machine; relayrl is timed with one torch thread (its default) and, on a CPU of several
cores, with one thread per core, each once before JaxMARL and once after, and each figure
is the mean of the two, so that a drift of the machine's speed in between cancels.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from relayrl.bench.common import markdown_table, timed_training

JAXMARL_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "jaxmarl_timing.py"

PRESETS = {"qmix": "spread-qmix-jaxmarl", "mappo": "spread-mappo-jaxmarl"}


def relayrl_rate(
    algo: str,
    steps: int,
    warmup: int,
    device: str = "cpu",
    num_envs: int | None = None,
    agents: int | None = None,
    batch: int | None = None,
    threads: int = 1,
    updates_per_episode: float | None = None,
    minibatch_unit: str | None = None,
) -> dict[str, Any]:
    """Trains ``algo``'s config for ``warmup`` env steps (start-up, first batch, learning
    start), then times ``steps`` more with the run's section timer on: env steps/s,
    updates/s, samples trained per env step and the share of the wall time by section (env,
    act, replay add, sample, update; ``other``: the rest of the loop). ``threads``: the
    run's ``torch_threads``; ``batch`` and ``updates_per_episode``: QMIX's;
    ``minibatch_unit``: MAPPO's."""
    from relayrl.experiment import build_config, build_run
    from relayrl.experiment.presets import preset_dict

    config = preset_dict(PRESETS[algo])
    if num_envs:
        config["env"]["num_envs"] = num_envs
    if agents:
        config["env"]["settings"]["N"] = agents
    if batch:
        config["qmix"]["batch_size"] = batch
    if updates_per_episode:
        config["qmix"]["updates_per_episode"] = updates_per_episode
    if minibatch_unit:
        config["on_policy"]["minibatch_unit"] = minibatch_unit
    config.update(
        {"preset": f"bench-{algo}-mpe", "total_steps": warmup, "report_interval": warmup, "eval": {"interval": 0}, "checkpoint_interval": 10**9, "device": device, "torch_threads": threads}
    )
    start = time.perf_counter()
    run = build_run(build_config(config), None, verbose=False)
    try:
        run.train()
        startup = time.perf_counter() - start
        seconds, env_steps, updates = timed_training(run, warmup + steps)
    finally:
        run.close()
    sections = {name: t / seconds for name, t in run.timer.seconds.items()}
    sections["other"] = max(0.0, 1.0 - sum(sections.values()))
    return {
        "env_steps": env_steps, "seconds": seconds, "sps": env_steps / seconds,
        "updates_per_s": updates / seconds, "update_ms": 1000 * run.timer.seconds.get("update", float("nan")) / max(updates, 1),
        "samples_per_env_step": samples_per_env_step(config), "startup_s": startup, "num_envs": config["env"]["num_envs"], "share": sections,
    }


def samples_per_env_step(config: dict[str, Any]) -> float:
    """Samples trained per env step (one sample: one env step of every agent): QMIX's batch of
    episodes times its updates per finished episode (each episode as long as the next);
    MAPPO's epochs over each rollout."""
    if config.get("qmix"):
        return config["qmix"]["batch_size"] * config["qmix"]["updates_per_episode"]
    return float(config["on_policy"]["epochs"])


def jaxmarl_rate(python: str, source: str, algo: str, steps: int) -> dict[str, Any] | None:
    """JaxMARL's own training of ``algo`` timed by ``benchmarks/jaxmarl_timing.py`` in
    ``python`` (a venv with jax and JaxMARL's dependencies), or None with the reason printed."""
    command = [python, str(JAXMARL_SCRIPT), "--algo", algo, "--steps", str(steps), "--jaxmarl-src", source]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    print(f"JaxMARL {algo} failed:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}", file=sys.stderr)
    return None


def thread_counts(device: str) -> tuple[int, ...]:
    """relayrl's torch threads to time: one, and one per core of a CPU of several (the cores
    JaxMARL's XLA uses)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return (1, cores) if device == "cpu" and cores > 1 else (1,)


def mean_rate(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two timings of one config (before and after the baseline) as one: the means of the
    rates, the profile shares and the start-up."""
    mean = {k: (first[k] + second[k]) / 2 for k in ("sps", "updates_per_s", "update_ms", "startup_s")}
    share = {name: (first["share"].get(name, 0.0) + second["share"].get(name, 0.0)) / 2 for name in {*first["share"], *second["share"]}}
    return {**first, **mean, "env_steps": first["env_steps"] + second["env_steps"], "seconds": first["seconds"] + second["seconds"], "share": share, "sps_each": (first["sps"], second["sps"])}


def run(quick: bool, python: str | None, source: str | None, device: str = "cpu") -> str:
    """The section's report: a table per algorithm, relayrl (one thread, and one per core)
    against JaxMARL."""
    # env steps timed (relayrl, after the warm-up) and trained by JaxMARL (its TOTAL_TIMESTEPS)
    plan = {"qmix": (20_000 if quick else 100_000, 4_000, 200_000 if quick else 1_000_000), "mappo": (16_384 if quick else 98_304, 16 * 128, 200_000 if quick else 1_000_000)}
    # MAPPO's minibatches as JaxMARL cuts them (each agent's chunks: the preset), and of whole
    # env copies' chunks, where its critic on the state computes one value per env step in
    # training too (docs/results/mpe_spread measures what that costs in learning)
    units = {"qmix": (None,), "mappo": ("agent", "env_step")}
    counts = thread_counts(device)
    parts = []
    for algo, (steps, warmup, jax_steps) in plan.items():
        timings = [(n, unit) for n in counts for unit in units[algo]]
        before = {t: relayrl_rate(algo, steps, warmup, device, threads=t[0], minibatch_unit=t[1]) for t in timings}
        theirs = jaxmarl_rate(python, source, algo, jax_steps) if python and source else None
        after = {t: relayrl_rate(algo, steps, warmup, device, threads=t[0], minibatch_unit=t[1]) for t in reversed(timings)}
        rows = []
        for n, unit in timings:
            ours = mean_rate(before[n, unit], after[n, unit])
            share = ours["share"]
            profile = ", ".join(f"{name} {share[name]:.0%}" for name in sorted(share, key=share.get, reverse=True) if share[name] >= 0.01)
            ratio = "not measured" if theirs is None else f"{ours['sps'] / theirs['sps']:.2f}x"
            each = " / ".join(f"{x:,.0f}" for x in ours["sps_each"])
            cut = {None: "", "agent": ", minibatches of agents' chunks", "env_step": ", minibatches of whole env copies"}[unit]
            rows.append([f"relayrl ({device}, {n} torch thread{'s' if n > 1 else ''}{cut})", f"{ours['sps']:,.0f} ({each})", f"{ours['updates_per_s']:,.1f}", f"{ours['samples_per_env_step']:.2f}", f"{ours['startup_s']:.1f} s start-up", ratio, profile])
        if theirs is not None:
            rows.append([f"JaxMARL {theirs['jax_version']} ({theirs['backend']}, every core; baseline)", f"{theirs['sps']:,.0f}", f"{theirs['updates_per_s']:,.1f}", f"{theirs['samples_per_env_step']:.2f}", f"{theirs['compile_s']:.1f} s compile", "1.0x", ""])
        parts.append(
            f"### {algo.upper()} at JaxMARL's config\n\nrelayrl timed over {steps:,} env steps after {warmup:,}, before JaxMARL and after (env steps/s: the mean, then each); "
            + (f"JaxMARL over {theirs['env_steps']:,}" if theirs else "JaxMARL not measured in this run (give --jaxmarl-python and --jaxmarl-src)")
            + ".\n\n" + markdown_table(["trainer", "env steps/s", "updates/s", "samples per env step", "before training", "relayrl / JaxMARL", "profile"], rows)
        )
    return (__doc__.split("\n\n", 1)[1] + "\n\n" + "\n\n".join(parts)).strip()


def env_rates(games: tuple[int, ...], agents: tuple[int, ...], quick: bool) -> dict[tuple[int, int], float]:
    """``simple-spread``'s env steps/s alone, random moves, for each (E, N)."""
    import numpy as np

    from relayrl.bench.common import best_of_rounds
    from relayrl.envs.spread import SpreadVectorEnv

    rates = {}
    for n in agents:
        for e in games:
            env = SpreadVectorEnv(e, N=n)
            env.reset(0)
            moves = np.random.default_rng(0).integers(0, 5, (64, e, n))
            calls = iter(range(10**9))
            (seconds,) = best_of_rounds([lambda: env.step([moves[next(calls) % 64]])], [max(4, 2000 // e)], 3 if quick else 5)
            rates[(e, n)] = e / seconds
    return rates


def games_against_mpe2(games: tuple[int, ...], quick: bool) -> list[list[str]]:
    """Env steps/s of relayrl's three mpe2 games as arrays over E games, beside mpe2's own
    parallel env (one game, the same random moves), each at its defaults."""
    import numpy as np
    from mpe2 import simple_reference_v3, simple_spread_v3, simple_tag_v3

    from relayrl.bench.common import best_of_rounds
    from relayrl.envs.reference import ReferenceVectorEnv
    from relayrl.envs.spread import SpreadVectorEnv
    from relayrl.envs.tag import TagVectorEnv

    rounds = 3 if quick else 5
    rows = []
    for name, ours, theirs in (
        ("simple-spread", SpreadVectorEnv, simple_spread_v3), ("simple-tag", TagVectorEnv, simple_tag_v3), ("simple-reference", ReferenceVectorEnv, simple_reference_v3),
    ):
        reference = theirs.parallel_env()
        reference.reset(seed=0)
        choices = {a: reference.action_space(a).n for a in reference.possible_agents}
        picks = np.random.default_rng(0).integers(0, 50, (64, len(choices)))
        count = iter(range(10**9))

        def mpe2_step() -> None:
            pick = picks[next(count) % 64]
            if not reference.agents:
                reference.reset()
            reference.step({a: pick[i] % n for i, (a, n) in enumerate(choices.items())})

        (mpe2_seconds,) = best_of_rounds([mpe2_step], [200], rounds)
        row = [name, f"{1 / mpe2_seconds:,.0f}"]
        for e in games:
            env = ours(e)
            env.reset(0)
            moves = [np.random.default_rng(0).integers(0, spec.n_actions, (64, e, spec.n_agents)) for spec in env.groups]
            calls = iter(range(10**9))

            def step() -> None:
                k = next(calls) % 64
                env.step([m[k] for m in moves])

            (seconds,) = best_of_rounds([step], [max(4, 2000 // e)], rounds)
            rate = e / seconds
            row.append(f"{rate:,.0f}")
        rows.append(row + [f"{rate * mpe2_seconds:,.0f}x"])
    return rows


def scaling(quick: bool, device: str = "cpu") -> str:
    """How cost grows with the work: the env alone (and the three mpe2 games against mpe2)
    and QMIX training over E games and N agents, and one QMIX update over the batch size."""
    games, agents = (1, 8, 64, 256), (3, 8, 32)
    steps = 4_000 if quick else 20_000
    env = env_rates(games, agents, quick)
    rows = [[f"E = {e}"] + [f"{env[(e, n)]:,.0f}" for n in agents] for e in games]
    parts = ["Env steps/s of `simple-spread` alone (random moves), over games E and agents N:\n\n" + markdown_table(["games", *(f"N = {n}" for n in agents)], rows)]
    if importlib.util.find_spec("mpe2") is None:
        parts.append("The mpe2 games against mpe2 itself: not measured, mpe2 is not installed (pip install -c constraints.txt -e '.[mpe]').")
    else:
        parts.append(
            "The mpe2 games relayrl steps as arrays, at mpe2's defaults (random moves): env steps/s of mpe2's own parallel env "
            "(one game) and of relayrl's over E games, and the ratio at the largest E:\n\n"
            + markdown_table(["game", "mpe2", *(f"relayrl E = {e}" for e in games), "relayrl / mpe2"], games_against_mpe2(games, quick))
        )
    rows = []
    for e in games:
        r = relayrl_rate("qmix", max(steps, 200 * e), max(2_000, 400 * e), device, num_envs=e)
        rows.append([f"E = {e}, N = 3", f"{r['sps']:,.0f}", f"{r['updates_per_s']:,.1f}", f"{r['update_ms']:.1f}", f"{r['share'].get('act', 0):.0%}", f"{r['share'].get('env', 0):.0%}", f"{r['share'].get('update', 0):.0%}"])
    for n in agents[1:]:
        r = relayrl_rate("qmix", steps, 2_000, device, agents=n)
        rows.append([f"E = 8, N = {n}", f"{r['sps']:,.0f}", f"{r['updates_per_s']:,.1f}", f"{r['update_ms']:.1f}", f"{r['share'].get('act', 0):.0%}", f"{r['share'].get('env', 0):.0%}", f"{r['share'].get('update', 0):.0%}"])
    parts.append(
        f"QMIX at JaxMARL's config ({device}), one update per 8 episodes and batches of 32 episodes whatever E and N:\n\n"
        + markdown_table(["games, agents", "env steps/s", "updates/s", "ms per update", "act", "env", "update"], rows)
    )
    rows = []
    for b in (8, 32, 128, 512):
        r = relayrl_rate("qmix", steps, max(2_000, 25 * b), device, batch=b)
        rows.append([f"{b} episodes", f"{r['update_ms']:.1f}", f"{r['update_ms'] / (b * 25) * 1000:.1f}"])
    parts.append(f"One QMIX update ({device}, E = 8, N = 3, 25-step episodes) over the batch size:\n\n" + markdown_table(["batch", "ms per update", "us per sampled step"], rows))
    return "\n\n".join(parts)


def _one_run(algo: str, steps: int, warmup: int) -> float:
    import torch

    torch.set_num_threads(1)
    return relayrl_rate(algo, steps, warmup, "cpu")["sps"]


def parallel_rates(counts: tuple[int, ...], algo: str = "qmix", steps: int = 20_000, warmup: int = 2_000) -> str:
    """Independent runs side by side, one process and one torch thread each, on the CPU:
    the machine's total env steps/s as runs are added (seeds of a grid, members of a
    population)."""
    import multiprocessing as mp

    rows = []
    for k in counts:
        with mp.get_context("spawn").Pool(k) as pool:
            start = time.perf_counter()
            rates = pool.starmap(_one_run, [(algo, steps, warmup)] * k)
            wall = time.perf_counter() - start
        rows.append([str(k), f"{sum(rates):,.0f}", f"{min(rates):,.0f} - {max(rates):,.0f}", f"{wall:.0f} s"])
    return f"{algo.upper()} at JaxMARL's config, independent runs in parallel (CPU, one thread each):\n\n" + markdown_table(
        ["runs", "total env steps/s", "per run", "wall"], rows
    )
