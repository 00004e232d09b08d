"""relayrl's Atari game against Gymnasium's own preprocessing of the same game, step by step.

    python benchmarks/atari_against_gymnasium.py [--game pong] [--seed 0] [--steps 30000]

Both play the same random actions from the same seed with no NOOP starts and no sticky
actions: ``relayrl.envs.atari.AtariGame`` against ``gym.make("ALE/<Game>-v5", frameskip=1)``
wrapped in ``AtariPreprocessing(frame_skip=4, screen_size=84, grayscale)`` and
``FrameStackObservation(4)``, which need opencv (``pip install opencv-python-headless``; not a
relayrl dependency, so this is a script, not a test). Prints, over one whole game, whether
every reward and termination agree, and the largest pixel difference of the stacked
observations at every step but the last and at the last (where Gymnasium max-pools the
final screen with a frame from an earlier step when the game ends inside the frame skip).
"""

import argparse

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=30_000)
    args = parser.parse_args()
    import ale_py
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    from relayrl.envs.atari import AGENT, AtariGame

    gym.register_envs(ale_py)
    name = "".join(part.capitalize() for part in args.game.split("_"))
    theirs = gym.make(f"ALE/{name}-v5", frameskip=1, repeat_action_probability=0.0)
    theirs = FrameStackObservation(AtariPreprocessing(theirs, noop_max=0, frame_skip=4, screen_size=84, terminal_on_life_loss=False), 4)
    ours = AtariGame(args.game, noop_max=0)
    reference, _ = theirs.reset(seed=args.seed)
    observed, _ = ours.reset(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    agree, differences = True, []
    for _ in range(args.steps):
        action = int(rng.integers(ours.action_space(AGENT).n))
        reference, reward, terminated, truncated, _ = theirs.step(action)
        observed, rewards, terminations, _, _ = ours.step({AGENT: action})
        agree &= reward == rewards[AGENT] and terminated == terminations[AGENT]
        differences.append(int(np.abs(np.moveaxis(np.asarray(reference), 0, -1).astype(int) - observed[AGENT].astype(int)).max()))
        if terminated or truncated:
            break
    print(f"{args.game}, seed {args.seed}: {len(differences)} steps, the game {'ended' if terminated else 'did not end'}")
    print(f"rewards and terminations agree at every step: {agree}")
    print(f"largest pixel difference before the last step: {max(differences[:-1])}; at the last step: {differences[-1]}")


if __name__ == "__main__":
    main()
