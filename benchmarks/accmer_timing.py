"""AccMER against MAC-PO on identical data: the learner's time per update, and the share of it
spent drawing and gathering the batch (paper 002, Figs. 4 and 6 measure the end-to-end
time of whole runs; this measures the part that differs between the two).

For each predator count, one replay is filled with the same episodes of epsilon-greedy
play (epsilon 0.995: the start of training), then each learner (preset
``predator-prey[-N]-macpo`` and ``-accmer``: the same QMIX with MAC-PO weights, uniform or
reuse sampling) starts from the same networks and takes the same number of updates on it.

    python benchmarks/accmer_timing.py [--predators 8 16 32] [--episodes 300] [--updates 20] [--buffer N]
"""

import argparse
import time
from typing import Any

import torch

from relayrl.experiment import Run, build_run, build_config
from relayrl.experiment.presets import preset_dict

PRESET = {8: "predator-prey", 16: "predator-prey-16", 32: "predator-prey-32"}


def learner(preset: str, episodes: int, updates: int, buffer: int | None) -> tuple[Run, Any]:
    """A run of ``preset`` that owes ``updates`` gradient steps per ``episodes`` stored
    (``buffer``: another replay capacity, in episodes)."""
    config = preset_dict(preset)
    config["qmix"]["updates_per_episode"] = updates / episodes
    if buffer is not None:
        config["qmix"]["buffer_size"] = buffer
    run = build_run(build_config(config), None, verbose=False)
    (found,) = run.learners.values()
    return run, found


def fill(run: Run, learner: Any, episodes: int) -> None:
    """Stores ``episodes`` episodes of play at the start of training (epsilon 0.995)."""
    run.start()
    while learner.episodes < episodes:
        learner.observe(run.collector.collect(learner.config.fragment_length, 0).fragments[learner.name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predators", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--buffer", type=int, help="replay capacity in episodes (default: the preset's; 32 predators' 10,000 take 6.3 GB each)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| predators | batch | learner | s / update | sampling (draw + gather) | share | accmer / macpo | sampling saved / MAC-PO's update |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for predators in args.predators:
        runs, learners = {}, {}
        for name in ("macpo", "accmer"):
            runs[name], learners[name] = learner(f"{PRESET[predators]}-{name}", args.episodes, args.updates, args.buffer)
        fill(runs["macpo"], learners["macpo"], args.episodes)
        learners["accmer"].load_state_dict(learners["macpo"].state_dict())  # the same replay, networks and owed updates
        per_update, sampling = {}, {}
        for name, found in learners.items():
            found.timer.enabled = True
            start = time.perf_counter()
            found.learn(0)
            seconds = time.perf_counter() - start
            per_update[name] = seconds / found.updates
            sampling[name] = found.timer.seconds.get("sample", 0.0) / found.updates
            ratio = saved = ""
            if name == "accmer":  # the update's math is the same: what reuse can save is the sampling
                ratio = f"{per_update['accmer'] / per_update['macpo']:.3f}"
                saved = f"{(sampling['macpo'] - sampling['accmer']) / per_update['macpo']:.2%}"
            print(
                f"| {predators} | {found.config.batch_size} | {name} | {per_update[name]:.3f} | {sampling[name]:.4f} s "
                f"| {sampling[name] / per_update[name]:.1%} | {ratio} | {saved} |",
                flush=True,
            )
        stored = learners["macpo"].episodes
        for run in runs.values():
            run.close()
    print(
        f"\n{stored} stored episodes, {args.updates} updates each, 1 torch thread. The two learners run one after the "
        "other, so other load on the machine moves 'accmer / macpo'; the sampling columns are what differs by design."
    )


if __name__ == "__main__":
    main()
