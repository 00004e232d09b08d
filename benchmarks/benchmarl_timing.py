"""Timing relayrl and BenchMARL the same way: env steps per second of wall clock after one
warm-up batch (relayrl: its own ``sps`` over the run's rows after the first; BenchMARL: two
runs, of one batch and of ``steps`` more, whose wall clocks differ by the time of ``steps``
env steps, counted by its own counter of collected frames). Used by
``mappo_vs_benchmarl.py`` and ``masac_vs_benchmarl.py``."""

import json
import subprocess
import time
from typing import Any


def relayrl_rate(config: dict[str, Any]) -> dict[str, float]:
    """Trains ``config`` (``report_interval`` = one batch) and times it after the first row."""
    from relayrl.experiment import build_config, build_run

    run = build_run(build_config(config), None, verbose=False)
    start = time.perf_counter()
    run.train()
    wall = time.perf_counter() - start
    run.close()
    rows = run.reporter.history
    timed = rows[-1]["env_steps"] - rows[0]["env_steps"]
    seconds = rows[-1]["wall_s"] - rows[0]["wall_s"]
    return {"env_steps": timed, "seconds": seconds, "sps": timed / seconds, "wall_s": wall, "updates": rows[-1]["updates"]}


# Defined before every BenchMARL script: its experiment config without evaluation,
# rendering, loggers, JSON or checkpoints, so that training alone is timed.
QUIET = """
def quiet(cfg, folder):
    cfg.evaluation = False
    cfg.render = False
    cfg.loggers = []
    cfg.create_json = False
    cfg.checkpoint_interval = 0
    cfg.save_folder = folder
"""


def benchmarl_rate(python: str, script: str, args: dict[str, Any], steps: int) -> dict[str, float]:
    """``script`` run by ``python`` with ``args`` (JSON, its ``steps`` set to 0 and to
    ``steps``), after ``QUIET``: it prints ``{"frames", "wall_s"}`` last."""

    def timed(total: int) -> dict[str, float]:
        out = subprocess.run([python, "-c", QUIET + script, json.dumps({**args, "steps": total})], capture_output=True, text=True, check=False)
        if out.returncode:
            raise RuntimeError(f"BenchMARL failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    short, long = timed(0), timed(steps)
    seconds = long["wall_s"] - short["wall_s"]
    frames = long["frames"] - short["frames"]
    return {"env_steps": frames, "seconds": seconds, "sps": frames / seconds, "wall_s": long["wall_s"]}


def report(settings: dict[str, Any], ours: dict[str, float], theirs: dict[str, float], out: str | None, extra: dict[str, Any] | None = None) -> None:
    """Prints (and with ``out`` writes) both figures and their ratio (and ``extra`` figures)."""
    import sys

    result = {"settings": settings, "relayrl": ours, "benchmarl": theirs, "ratio": ours["sps"] / theirs["sps"], **(extra or {})}
    print(json.dumps(result, indent=2))
    if out:
        with open(out, "w") as handle:
            json.dump(result, handle, indent=2)
    print(f"relayrl {ours['sps']:.0f} env steps/s, BenchMARL {theirs['sps']:.0f}: {result['ratio']:.2f}x", file=sys.stderr)
