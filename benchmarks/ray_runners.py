"""Env steps/s of one run with its env copies stepped by K Ray env runners, against the local
backend in the same process (docs/results/ray.md).

The run is ``pursuit-quickstart`` (SUPER-quantile, the small Pursuit and network) with E
env copies, of the vectorised Pursuit (``--env pursuit``: one NumPy step for all copies) or of
PettingZoo's (``--env pursuit-pz``: each copy stepped in turn). ``--mode collect`` puts learning past the budget, so the figure is acting and
stepping (and for Ray, publishing the networks and joining the fragments); ``--mode train``
learns as the preset does. Each row is one run of ``--steps`` env steps after a warm-up
of one report; the ratios are against K = 1 runner and the local backend with the same
fragments.

    python benchmarks/ray_runners.py [--env pursuit] [--envs 8] [--runners 1 2 4 8] [--steps 8000] [--mode collect] [--fragment-steps 1 16 64]
"""

import argparse
import csv
import tempfile
from dataclasses import dataclass
from pathlib import Path

from relayrl.arena.ray.runners import start_ray
from relayrl.experiment import build_run, build_config
from relayrl.experiment.presets import preset_dict


@dataclass
class Measured:
    """A run's metric rows after its first report (Ray's and the actors' start-up excluded)."""

    rows: list[dict[str, str]]

    @property
    def seconds(self) -> float:
        return float(self.rows[-1]["wall_s"]) - float(self.rows[0]["wall_s"])

    @property
    def sps(self) -> float:
        """Env steps/s."""
        return (float(self.rows[-1]["env_steps"]) - float(self.rows[0]["env_steps"])) / self.seconds

    @property
    def updates_per_s(self) -> float:
        """Updates/s of the reported learner's agents (each update one batch per agent)."""
        return (float(self.rows[-1]["updates"]) - float(self.rows[0]["updates"])) / self.seconds

    def per_second(self, *columns: str) -> float:
        """What ``columns`` count per report (seconds relaying or drawing, transitions or
        bytes relayed), summed over the reports and ``columns``, per second of wall time."""
        return sum(float(r.get(c) or 0.0) for r in self.rows[1:] for c in columns) / self.seconds


def measure(config: dict) -> Measured:
    """Trains ``config`` in a temporary run directory; returns its rows from the first report on."""
    with tempfile.TemporaryDirectory() as root:
        run = build_run(build_config(config), Path(root) / "run", verbose=False)
        run.train()
        run.close()
        with (Path(root) / "run" / "metrics.csv").open() as handle:
            return Measured(list(csv.DictReader(handle)))


def quickstart(envs: int, steps: int, backend: dict) -> dict:
    """``pursuit-quickstart`` with ``envs`` copies for ``steps`` env steps, reported 4 times."""
    config = preset_dict("pursuit-quickstart")
    config.update(total_steps=steps, report_interval=steps // 4, checkpoint_interval=10 * steps, backend=backend)
    config["env"]["num_envs"] = envs
    config["eval"]["interval"] = 0
    return config


def run(env: str, envs: int, steps: int, mode: str, backend: dict) -> tuple[float, float]:
    config = quickstart(envs, steps, backend)
    config["env"]["name"] = env
    if mode == "collect":
        config["dqn"]["learning_starts"] = 10 * steps
    measured = measure(config)
    return measured.sps, measured.updates_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", choices=["pursuit", "pursuit-pz"], default="pursuit", help="vectorised in NumPy, or PettingZoo's copies")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--mode", choices=["collect", "train"], default="collect")
    parser.add_argument("--fragment-steps", type=int, nargs="+", default=[1, 16, 64], help="steps of each copy per runner call")
    args = parser.parse_args()
    start_ray(None, max(args.runners))
    print("| backend | runners | env copies | steps per fragment | env steps/s | updates/s | env steps/s, ratio to 1 runner | ratio to local |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for fragment in args.fragment_steps:
        local, local_updates = run(args.env, args.envs, args.steps, args.mode, {"kind": "local", "fragment_steps": fragment})
        print(f"| local | - | {args.env} x {args.envs} | {fragment} | {local:,.0f} | {local_updates:,.1f} | | 1.00 |", flush=True)
        first = None
        for k in args.runners:
            sps, updates = run(args.env, args.envs, args.steps, args.mode, {"kind": "ray", "runners": k, "fragment_steps": fragment})
            first = first or sps
            print(f"| ray | {k} | {args.env} x {args.envs} | {fragment} | {sps:,.0f} | {updates:,.1f} | {sps / first:.2f} | {sps / local:.2f} |", flush=True)


if __name__ == "__main__":
    main()
