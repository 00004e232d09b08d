"""Env steps/s and updates/s of one run whose P learning policies learn in the driver, one
after another, or in P learner actors, in parallel (``backend.learners``), in the same
process (docs/results/ray.md).

The run is ``pursuit-quickstart`` (SUPER-quantile, the small Pursuit and network) with P
teams, each a policy of its own playing E / P of the E copies, stepped by K Ray env
runners; every learner takes the preset's updates (one batch per agent every 4 of its env
steps). Each row is one run of ``--steps`` env steps after a warm-up of one report; the
ratio is against the driver's learners with the same runners and fragments. ``--relay``
measures instead what the SUPER relay between the P learner actors costs (``relay.between``
all of them: every learner sends what its selection picked to every other one, one batch
per sender and fragment): the seconds each learner spends handing out, fetching and storing
relayed batches (the ``relay_seconds`` metric, over the P learners) as a share of the loop's
wall time, and the run's throughput against the same run without the relay.

    python benchmarks/ray_learners.py [--policies 1 2 4] [--envs 8] [--runners 1] [--steps 8000] [--fragment-steps 16] [--learner-cpus 0.5] [--relay]
"""

import argparse
import math

from ray_runners import measure, quickstart  # this folder's

from relayrl.arena.ray.runners import start_ray


def run(policies: int, envs: int, steps: int, backend: dict, relay: bool = False) -> tuple[float, float, float, float, float]:
    """Env steps/s, updates/s of every policy together, and per second: the learners'
    seconds relaying, the transitions and the bytes relayed (over all senders)."""
    config = quickstart(envs, steps, backend)
    if policies > 1:
        config["policies"] = {f"team{i}": {} for i in range(policies)}
        config["match"] = [{"pursuer": f"team{i}"} for i in range(policies)]
    if relay:
        config["relay"] = {"between": list(config["policies"])}
    m = measure(config)
    pids = list(config.get("policies") or [])
    sent = m.per_second(*(f"relayed_out/{pid}" for pid in pids))
    sent_bytes = m.per_second(*(f"relayed_out_bytes/{pid}" for pid in pids))
    return m.sps, policies * m.updates_per_s, m.per_second("relay_seconds"), sent, sent_bytes  # the policies share one schedule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--fragment-steps", type=int, default=16, help="steps of each copy per fragment")
    parser.add_argument("--learner-cpus", type=float, default=0.5, help="CPUs each learner actor reserves")
    parser.add_argument("--relay", action="store_true", help="learner actors with and without the relay between them")
    args = parser.parse_args()
    start_ray(None, math.ceil(max(args.policies) * args.learner_cpus + args.runners))
    actors = {"kind": "ray", "runners": args.runners, "fragment_steps": args.fragment_steps, "learners": "actors", "learner_cpus": args.learner_cpus}
    if args.relay:
        print("| policies (learner actors) | relay | env steps/s | ratio | relaying, share of each learner's loop time | all learners' relaying / wall time | transitions sent/s | MB sent/s |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        for p in args.policies:
            apart = run(p, args.envs, args.steps, actors)[0]
            print(f"| {p} | none | {apart:,.0f} | 1.00 | | | | |", flush=True)
            relayed, _, relaying, sent, sent_bytes = run(p, args.envs, args.steps, actors, relay=True)
            print(f"| {p} | between all | {relayed:,.0f} | {relayed / apart:.2f} | {relaying / p:.2%} | {relaying:.2%} | "
                  f"{sent:,.0f} | {sent_bytes / 1e6:.3f} |", flush=True)
        return
    print("| policies | learners | runners | env steps/s | updates/s (all policies) | ratio to the driver's learners |")
    print("|---:|---|---:|---:|---:|---:|")
    for p in args.policies:
        base = {"kind": "ray", "runners": args.runners, "fragment_steps": args.fragment_steps}
        driver, driver_updates, *_ = run(p, args.envs, args.steps, base)
        print(f"| {p} | driver | {args.runners} | {driver:,.0f} | {driver_updates:,.1f} | 1.00 |", flush=True)
        with_actors, actor_updates, *_ = run(p, args.envs, args.steps, actors)
        print(f"| {p} | actors | {args.runners} | {with_actors:,.0f} | {actor_updates:,.1f} | {with_actors / driver:.2f} |", flush=True)


if __name__ == "__main__":
    main()
