"""What the AccMER reference code's reuse rule draws, run on its own replay class.

Drives the ``ReplayBuffer`` of the public AccMER code (kailashg26/AccMER, the folder in its
accmer.zip; needs torch) with the cadence of its training loop (``src/run/run.py``): 8
episodes inserted per iteration, one batch sampled per iteration once the replay holds a
batch, and the batch's mean weight written into the weight table only when the learner
logs (``learner_log_interval`` env steps apart; ``max_q_learner.train`` returns None
otherwise). Every episode is ``--episode-length`` steps (the punished setting's teams that
never catch run the whole 200) and every written weight is ``--weight`` (the logged
``w_to_use`` stays near 0.3; a weight that falls by more than 20% between two writes would
keep the previous block on top for a while). Prints, per window of env steps, the share of
the reused half of the batch (S-) that lands on slots holding no episode yet (zeros, with a
``filled`` mask of 0: they add nothing to the loss), and the share of batches in which S+
repeats a slot of S-.

    PYTHON docs/results/accmer/reference_reuse.py --checkout ACCMER/src [--buffer 10000]
"""

import argparse
import sys

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, help="the reference's src folder")
    parser.add_argument("--buffer", type=int, default=10000, help="replay capacity in episodes")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--episode-length", type=int, default=200)
    parser.add_argument("--log-interval", type=int, default=10000)
    parser.add_argument("--weight", type=float, default=0.3)
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, args.checkout)
    from components.episode_buffer import EpisodeBatch, ReplayBuffer  # the reference's own classes

    np.random.seed(args.seed)  # the reference draws S+ with numpy's global generator
    scheme = {"episode": {"vshape": (1,), "dtype": torch.long, "episode_const": True}}
    length = args.episode_length + 1
    replay = ReplayBuffer(scheme, {}, args.buffer, length)
    t_env, played, last_log = 0, 0, -args.log_interval - 1
    rows: list[tuple[int, float, float]] = []  # (t_env, empty share of S-, repeated)
    while t_env < args.steps:
        batch = EpisodeBatch(scheme, {}, args.envs, length)
        batch.data.transition_data["filled"][:, : args.episode_length] = 1
        batch.data.episode_data["episode"][:, 0] = torch.arange(played, played + args.envs) + 1
        replay.insert_episode_batch(batch)
        played += args.envs
        t_env += args.envs * args.episode_length
        if not replay.can_sample(args.batch):
            continue
        drawn = replay.sample(args.batch)
        ids = drawn["episode"][:, 0].numpy()
        reused, fresh = ids[: args.batch // 2], ids[args.batch // 2 :]
        repeated = float(np.isin(fresh[fresh > 0], reused[reused > 0]).any())
        rows.append((t_env, float((reused == 0).mean()), repeated))
        if t_env - last_log >= args.log_interval:  # max_q_learner.train returns the weight only then
            replay.update_weight_table(args.batch, args.weight)
            last_log = t_env

    table = np.array(rows)
    print(f"replay {args.buffer} episodes, batch {args.batch}, {args.envs} envs, episodes of {args.episode_length} steps, "
          f"weights written every {args.log_interval} env steps; {len(rows)} batches")
    print("| env steps | batches | S- on empty slots | batches where S+ repeats S- |")
    print("|---|---:|---:|---:|")
    for start in range(0, args.steps, args.window):
        inside = table[(table[:, 0] > start) & (table[:, 0] <= start + args.window)]
        if len(inside):
            print(f"| {start:,}-{start + args.window:,} | {len(inside)} | {inside[:, 1].mean():.1%} | {inside[:, 2].mean():.1%} |")
    print(f"| all | {len(table)} | {table[:, 1].mean():.1%} | {table[:, 2].mean():.1%} |")


if __name__ == "__main__":
    main()
