"""``relayrl bench``: every benchmark, its ratios against the named baselines, and a
markdown report with the machine description (docs/results/benchmarks.md by default)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from relayrl.bench.common import machine_description, markdown_table, package_version
from relayrl.core.device import configure_threads, resolve_device

SECTIONS = ("replay", "env", "learner", "loop", "rllib", "marl", "marl-scaling")
RLLIB_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rllib_pursuit.py"
LOOP_TARGET_VS_RLLIB = 4.0
LOOP_TARGET_VS_MATH = 0.75


def _replay(quick: bool) -> str:
    try:
        from relayrl.bench import replay
    except ImportError:
        return "skipped: cpprb is not installed (pip install -e '.[dev]')"
    text, passed = replay.run(quick)
    return text + ("" if passed else "\n\nSome replay targets FAILED.")


def _env(quick: bool) -> str:
    from relayrl.bench import env

    table, _ = env.run(quick)
    return (
        "Random actions, SPEC Pursuit settings (16x16, 8 pursuers, 30 evaders). Baseline: one "
        "PettingZoo pursuit_v5 parallel env with dict actions. Target: >= 100x at E = 64.\n\n" + table
    )


def _learner(quick: bool, device: torch.device) -> str:
    from relayrl.bench import learner

    parts = []
    for dev in [torch.device("cpu")] + ([device] if device.type == "cuda" else []):
        table, _ = learner.run(dev, quick)
        parts.append(f"Device {dev.type}, torch threads {torch.get_num_threads()}, batch 32 per agent:\n\n{table}")
    table, _ = learner.thread_comparison(quick)
    parts.append("Thread settings on CPU (best of rounds):\n\n" + table)
    return "\n\n".join(parts)


def rllib_python(explicit: str | None) -> str | None:
    """The interpreter with ray[rllib]: ``--rllib-python``, else ~/venvs/rllib (its own venv,
    see benchmarks/README.md), else this one if it has ray."""
    if explicit:
        return explicit
    venv = Path.home() / "venvs" / "rllib" / "bin" / "python"
    if venv.exists():
        return str(venv)
    return sys.executable if package_version("ray") != "not installed" else None


def _rllib(quick: bool, python: str | None, threads: int) -> dict | None:
    if python is None or not RLLIB_SCRIPT.exists():
        return None
    # --model exact: relayrl's network inside RLlib's DQN module, so both sides do the same math
    command = [python, str(RLLIB_SCRIPT), "--threads", str(threads), "--model", "exact", *(["--quick"] if quick else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return None


def _loop(quick: bool, rllib: dict | None, threads: int) -> str:
    from relayrl.bench import loop

    steps = 1200 if quick else 4000
    common = [f"torch_threads={threads}"]
    results = [
        loop.measure("pursuit-super-quantile", ["env.num_envs=1", *common], steps, "E = 1 (one game, like the RLlib baseline)"),
        loop.measure("pursuit-super-quantile", ["env.num_envs=16", *common], steps, "E = 16"),
    ]
    source = (
        f"RLlib {rllib['ray']} measured in this run (torch threads {rllib['torch_threads']}, relayrl's network "
        f"via --model exact, peak RSS {rllib['peak_rss_mib']:,.0f} MiB)"
        if rllib
        else "not measured in this run (needs ray[rllib], see benchmarks/README.md), so no ratio against it"
    )
    rows = []
    for r in results:
        vs_rllib = f"{r.env_steps_per_s / rllib['env_steps_per_s']:.1f}x" if rllib else "not measured"
        if rllib:
            vs_rllib += f" ({'pass' if r.env_steps_per_s / rllib['env_steps_per_s'] >= LOOP_TARGET_VS_RLLIB else 'FAIL'})"
        rows.append([
            r.label, f"{r.env_steps_per_s:,.1f}", f"{r.updates_per_s:,.1f}", f"{r.math_env_steps_per_s:,.1f}",
            f"{r.math_ratio:.2f}x ({'pass' if r.math_ratio >= LOOP_TARGET_VS_MATH else 'FAIL'})", vs_rllib,
        ])
    if rllib:
        updates = rllib.get("updates_per_s_per_policy", float("nan"))
        rows.append([f"RLlib {rllib['ray']}, same network (baseline)", f"{rllib['env_steps_per_s']:,.1f}", f"{updates:,.1f}", "", "", "1.0x"])
    table = markdown_table(
        ["SUPER-quantile Pursuit loop", "env steps/s", "updates/s per agent", "math-only env steps/s",
         f"vs math-only (>= {LOOP_TARGET_VS_MATH})", f"vs RLlib (>= {LOOP_TARGET_VS_RLLIB:.0f}x)"],
        rows,
    )
    sections = list(results[0].section_share)
    profile = markdown_table(
        ["section", *[r.label for r in results]],
        [[name, *[f"{100 * r.section_share[name]:.1f}%" for r in results]] for name in sections],
    )
    unmatched = ""
    if rllib and rllib.get("unmatched"):
        items = rllib["unmatched"].items() if isinstance(rllib["unmatched"], dict) else enumerate(rllib["unmatched"])
        unmatched = "\n\nRLlib settings that differ from relayrl's:\n" + "\n".join(f"- {v}" for _, v in items)
    return (
        f"Preset pursuit-super-quantile (SPEC §1.1: 1 update of batch 32 per agent per 4 env steps), torch threads {threads}, "
        f"{steps} measured env steps after learning starts; RLlib baseline: {source}.\n\n{table}\n\n"
        f"Share of the loop's wall time by section:\n\n{profile}{unmatched}"
    )


def _marl(quick: bool, jaxmarl: tuple[str | None, str | None], device: torch.device) -> str:
    from relayrl.bench import marl

    return marl.run(quick, *jaxmarl, device=device.type)


def _marl_scaling(quick: bool, device: torch.device) -> str:
    from relayrl.bench import marl

    return marl.scaling(quick, device.type)


def run_suite(
    only: list[str] | None,
    quick: bool,
    out: Path | None,
    threads: int = 1,
    rllib_interpreter: str | None = None,
    jaxmarl: tuple[str | None, str | None] = (None, None),
    device_name: str = "auto",
) -> str:
    configure_threads(threads)
    device = resolve_device(device_name)
    chosen = [s for s in SECTIONS if not only or s in only]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report = [
        "# relayrl benchmarks",
        "",
        f"Machine: {machine_description()}.",
        f"Run: `relayrl bench{' --quick' if quick else ''}{' --only ' + ','.join(only) if only else ''} --threads {threads}"
        f"{'' if device_name == 'auto' else ' --device ' + device_name}`, {started}. "
        "Every ratio compares against a baseline timed in the same run.",
    ]
    rllib = None
    for name in chosen:
        print(f"== {name} ...", flush=True)
        start = time.perf_counter()
        if name == "replay":
            body = _replay(quick)
        elif name == "env":
            body = _env(quick)
        elif name == "learner":
            body = _learner(quick, device)
        elif name == "marl":
            body = _marl(quick, jaxmarl, device)
        elif name == "marl-scaling":
            body = _marl_scaling(quick, device)
        elif name == "rllib":
            continue  # measured before the loop, which reports against it
        else:
            if "rllib" in chosen:
                rllib = _rllib(quick, rllib_python(rllib_interpreter), threads)
            body = _loop(quick, rllib, threads)
        section = f"\n## {name}\n\n{body}\n\n({time.perf_counter() - start:.0f} s)"
        print(section, flush=True)
        report.append(section)
    text = "\n".join(report) + "\n"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"\nwritten to {out}")
    return text
