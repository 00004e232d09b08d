"""``simple-spread`` with ``release: pettingzoo-1.22.2`` against PettingZoo 1.22's own
``simple_spread_v2`` (the release HARL's published MPE results ran), output by output.

PettingZoo 1.22.2 is no longer on PyPI; 1.22.3 differs from it only in docstrings under
``pettingzoo/mpe``. It needs a Python of its own (it pins an older Gymnasium):

    python -m venv /tmp/pz122 && /tmp/pz122/bin/pip install "pettingzoo[mpe]==1.22.3"
    /tmp/pz122/bin/python docs/results/centralised/pettingzoo_1_22_lockstep.py record /tmp/pz122.npz
    python docs/results/centralised/pettingzoo_1_22_lockstep.py compare /tmp/pz122.npz

``record`` plays 12 games of 25 steps with uniform random continuous actions from crowded
starts (so that agents collide) and keeps every start, action, observation, reward and
state; ``compare`` puts relayrl's games at the same starts, plays the same actions and
prints the largest difference of each output (0 to float32 rounding where they agree).
"""

import sys

import numpy as np

GAMES, CYCLES, N = 12, 25, 3


def record(path: str) -> None:
    from pettingzoo.mpe import simple_spread_v2

    rng = np.random.default_rng(0)
    starts, landmarks, actions, obs, rewards, states = [], [], [], [], [], []
    for g in range(GAMES):
        env = simple_spread_v2.parallel_env(N=N, continuous_actions=True, max_cycles=CYCLES)
        env.reset(seed=g)
        world = env.unwrapped.world
        for agent in world.agents:  # crowded toward the centre in every other game
            agent.state.p_pos = agent.state.p_pos * (0.25 if g % 2 else 1.0)
        starts.append([a.state.p_pos.copy() for a in world.agents])
        landmarks.append([lm.state.p_pos.copy() for lm in world.landmarks])
        game_actions, game_obs, game_rewards, game_states = [], [], [], []
        for _ in range(CYCLES):
            chosen = rng.uniform(0, 1, (N, 5)).astype(np.float32)
            o, r, _, _, _ = env.step({a: chosen[i] for i, a in enumerate(env.possible_agents)})
            game_actions.append(chosen)
            game_obs.append([o[a] for a in env.possible_agents])
            game_rewards.append([r[a] for a in env.possible_agents])
            game_states.append(env.state())
        actions.append(game_actions), obs.append(game_obs), rewards.append(game_rewards), states.append(game_states)
    np.savez(path, starts=starts, landmarks=landmarks, actions=actions, obs=obs, rewards=rewards, states=states)
    print(f"recorded {GAMES} games of {CYCLES} steps into {path}")


def compare(path: str) -> None:
    from relayrl.envs.spread import SpreadVectorEnv

    trace = np.load(path)
    ours = SpreadVectorEnv(GAMES, N=N, continuous_actions=True, max_cycles=CYCLES, release="pettingzoo-1.22.2")
    ours.reset(0)
    ours.bodies.pos[:] = trace["starts"]
    ours.bodies.vel[:] = 0.0
    ours.targets[:] = trace["landmarks"]
    ours.frames[:] = 0
    worst = {"observations": 0.0, "rewards": 0.0, "state": 0.0}
    for t in range(CYCLES):
        steps, _ = ours.step([trace["actions"][:, t]])
        worst["observations"] = max(worst["observations"], float(np.abs(steps[0].next_obs - trace["obs"][:, t]).max()))
        worst["rewards"] = max(worst["rewards"], float(np.abs(steps[0].reward - trace["rewards"][:, t]).max()))
        worst["state"] = max(worst["state"], float(np.abs(steps[0].next_state - trace["states"][:, t]).max()))
    collisions = int((np.ptp(trace["rewards"], axis=-1) > 0).sum())
    print(f"{GAMES} games x {CYCLES} steps, {collisions} agent steps with a collision penalty; largest differences: "
          + ", ".join(f"{name} {value:.2e}" for name, value in worst.items()))


if __name__ == "__main__":
    {"record": record, "compare": compare}[sys.argv[1]](sys.argv[2])
