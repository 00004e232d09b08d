"""What serving DASE's shared replay to learners in different Ray actors costs
(``shared_replay.between``; docs/results/ray.md).

The run is a DASE preset (TD3, K agents, each in its own copy of the task, one shared
replay with DPS weights) three ways, each one run of ``--steps`` env steps after a warm-up
of one report, one Ray env runner stepping the K copies:
- ``one learner``: the preset as it is, K agents in one learner in the driver (the baseline);
- ``K learners, driver``: K policies of one agent each, their learners in the driver, one
  replay shared between them;
- ``K learner actors``: the same K learners, each in a Ray actor, the replay in an actor of
  its own: per fragment every learner actor returns its rows, the replay actor adds them,
  and every learner gathers its fragment's draws in one call.
``draw share`` is the learners' seconds drawing from the shared replay (``draw_seconds``:
the gather, from another actor where the replay lives in one) over the loop's wall time.

    python benchmarks/ray_shared_replay.py [--preset hopper-dase-td3] [--agents 2 4] [--steps 2000] [--fragment-steps 1 16] [--learner-cpus 0.5]
"""

import argparse
import math

from ray_runners import measure  # this folder's

from relayrl.arena.ray.runners import start_ray
from relayrl.experiment.presets import preset_dict


def config(preset: str, agents: int, steps: int, backend: dict, learners: int) -> dict:
    """The DASE ``preset`` with ``agents`` copies as one learner (``learners`` 1) or one learner per agent."""
    table = preset_dict(preset)
    table["env"]["settings"]["n_agents"] = agents
    table.update(total_steps=steps, report_interval=steps // 4, checkpoint_interval=10 * steps, backend=backend)
    table["eval"]["interval"] = 0
    table["actor_critic"]["random_steps"] = steps // 4  # learning from the first report on
    if learners > 1:
        pids = [f"agent{k}" for k in range(agents)]
        table["policies"] = {pid: {} for pid in pids}
        table["match"] = [{"agent": pids}]
        table["shared_replay"] = {"between": pids}
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="hopper-dase-td3")
    parser.add_argument("--agents", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--fragment-steps", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--learner-cpus", type=float, default=0.5, help="CPUs each learner actor reserves")
    args = parser.parse_args()
    start_ray(None, math.ceil(max(args.agents) * args.learner_cpus + 1))
    print("| agents | steps per fragment | learners | env steps/s | updates/s (each agent) | ratio to one learner | draw share |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for k in args.agents:
        for fragment in args.fragment_steps:
            ray = {"kind": "ray", "runners": 1, "fragment_steps": fragment}
            actors = {**ray, "learners": "actors", "learner_cpus": args.learner_cpus}
            base = None
            for name, backend, learners in (("one learner", ray, 1), (f"{k} learners, driver", ray, k), (f"{k} learner actors", actors, k)):
                m = measure(config(args.preset, k, args.steps, backend, learners))
                sps, updates, drawing = m.sps, m.updates_per_s, m.per_second("draw_seconds")
                base = base or sps
                share = f"{drawing:.2%}" if learners > 1 else ""
                print(f"| {k} | {fragment} | {name} | {sps:,.1f} | {updates:,.1f} | {sps / base:.2f} | {share} |", flush=True)


if __name__ == "__main__":
    main()
