"""JaxMARL's published MPE configs on ``simple-spread`` (mpe2's dynamics in NumPy):
``spread-qmix-jaxmarl`` and ``spread-mappo-jaxmarl``. ``relayrl bench --only marl`` times
them against JaxMARL's own scripts.

From JaxMARL's repository (``baselines/QLearning/config/alg/ql_rnn_mpe.yaml`` and
``baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml``):

- QMIX: 8 envs, GRU 64, mixer embedding 32 with hypernetworks of 128, Adam 0.005, gamma
  0.9, one-step double-Q targets, gradient norm 25, batches of 32 sequences of an episode
  (JaxMARL: 32 rollout chunks of 26 steps) from a replay of 5,000, one update per 8
  episodes (200 env steps; JaxMARL: 8 x 26 = 208), hard target copies every 200 updates,
  epsilon 1 -> 0.05 over 10% of 10M steps, agent ids in the observations and the state (the
  agents' observations side by side) for the mixer. Not taken: its learning rate's linear
  decay and the 10,000 steps before learning (relayrl's QMIX learns once a batch is stored).
- MAPPO: 16 envs, 128-step rollouts, 4 epochs of 4 minibatches, 128 tanh units then a GRU
  of 128 in actor and critic, Adam 2e-3 annealed, GAE 0.95, clip 0.2, entropy 0.01, value
  coefficient 0.5 on a clipped MSE, gradient norm 0.5, the critic on the state, one actor
  for all agents.

Both train 4.0 samples per env step (one sample: one env step of every agent), as JaxMARL's.
10M env steps, as JaxMARL's TOTAL_TIMESTEPS.
"""

from typing import Any

from relayrl.experiment.presets.common import Presets

RUN: dict[str, Any] = {"total_steps": 10_000_000, "report_interval": 20_000, "eval": {"interval": 100_000, "episodes": 32}}
QMIX: dict[str, Any] = {
    "env": {"name": "simple-spread", "num_envs": 8},
    "qmix": {
        "mixer": "qmix", "hidden": 64, "mixer_embed": 32, "hypernet_hidden": 128, "lr": 0.005, "gamma": 0.9, "td_lambda": 0.0,
        "double_q": True, "grad_clip": 25.0, "batch_size": 32, "buffer_size": 5000, "max_episode_length": 25,
        "updates_per_episode": 0.125, "target_update_episodes": 1600, "epsilon_start": 1.0, "epsilon_end": 0.05,
        "epsilon_steps": 1_000_000, "agent_id": True, "last_action": False, "fragment_length": 200,
    },
}
MAPPO: dict[str, Any] = {
    "env": {"name": "simple-spread", "num_envs": 16},
    "on_policy": {
        "algo": "mappo", "rollout_length": 128, "epochs": 4, "minibatches": 4, "lr": 2e-3, "lr_anneal": True, "hidden": [128],
        "activation": "tanh", "recurrent": True, "chunk_length": 128, "gamma": 0.99, "gae_lambda": 0.95, "clip": 0.2,
        "value_clip": 0.2, "value_loss": "mse", "value_coef": 0.5, "entropy_coef": 0.01, "max_grad_norm": 0.5,
        "normalize_values": False, "agent_id": False, "critic_input": "state",
    },
}


def jaxmarl_presets() -> Presets:
    return {
        "spread-qmix-jaxmarl": ("QMIX at JaxMARL's ql_rnn_mpe config [simple-spread, 3 agents]", {**QMIX, **RUN}),
        "spread-mappo-jaxmarl": ("recurrent MAPPO at JaxMARL's MPE config [simple-spread, 3 agents]", {**MAPPO, **RUN}),
    }
