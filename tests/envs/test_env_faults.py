"""Envs a user brings that misbehave or have unusual shapes: each trains where that is well
defined, and otherwise stops with one message naming the env, the step and the fix."""

import numpy as np
import pytest
from gymnasium import spaces

from relayrl.core.errors import ConfigError, EnvError, NonFiniteError
from relayrl.envs import EnvFactory
from relayrl.envs.corridor import CorridorEnv
from relayrl.experiment import Factories, build_config, build_run

SHORT = {"total_steps": 600, "report_interval": 300, "checkpoint_interval": 600, "eval": {"interval": 0}}
QMIX = {"qmix": {"batch_size": 4, "buffer_size": 50, "max_episode_length": 20, "hidden": 16, "mixer_embed": 8, "hypernet_hidden": 8}}


class StatefulCorridor(CorridorEnv):
    """The corridor with a global state (every runner's position) whose ``state()`` fails
    from the third step of an episode on, as an env's may once agents have left."""

    def __init__(self) -> None:
        super().__init__(3, 5, 12)
        self.state_space = spaces.Box(0.0, 5.0, (3,), np.float32)

    def state(self) -> np.ndarray:
        if self._steps >= 3:
            raise RuntimeError("no state after step 2")
        return np.array([self._position[a] for a in self.possible_agents], np.float32)


def test_multiwalker_trains_past_fallen_walkers_without_its_state():
    """multiwalker's state() fails once a walker has fallen; TD3 does not read the state, so
    the env is never asked for it and episodes ended by falls train on."""
    pytest.importorskip("Box2D")
    config = build_config({"preset": "walkers", "env": {"name": "pettingzoo.sisl.multiwalker_v9"}, **SHORT,
                           "actor_critic": {"random_steps": 300, "batch_size": 32, "buffer_size": 1000, "hidden": [32]}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert not run.venue.venv.groups[0].state_shape
    assert sum(r["episodes"] for r in rows) > 0 and np.isfinite(rows[-1]["td_loss"])


def test_mappo_reads_multiwalkers_state_up_to_the_fall_that_ends_the_episode():
    """A fall ends multiwalker's episode (every walker terminates) and its state() fails from
    then on: the state before the fall stands in as the terminal state, which no learner
    bootstraps from, and MAPPO's critic trains on."""
    pytest.importorskip("Box2D")
    config = build_config({"preset": "walkers-mappo", "env": {"name": "pettingzoo.sisl.multiwalker_v9", "num_envs": 2}, **SHORT,
                           "on_policy": {"algo": "mappo", "rollout_length": 32, "hidden": [32]}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert run.venue.venv.groups[0].state_shape and not run.venue.venv.groups[0].flattened
    assert sum(r["episodes"] for r in rows) > 0 and np.isfinite(rows[-1]["td_loss"])


def test_a_failing_state_is_named_where_a_learner_reads_it():
    """QMIX's mixer reads the global state: the env's failing state() stops the run with the
    env's name, the step and the fix."""
    config = build_config({"preset": "stateful", "env": {"name": "corridor"}, **SHORT, **QMIX})
    run = build_run(config, None, Factories(env=EnvFactory(StatefulCorridor)), verbose=False)
    with pytest.raises(EnvError, match=r"StatefulCorridor\.state\(\) raised RuntimeError: no state after step 2, at step 3 of its episode.*train a learner that does not"):
        run.train()
    run.close()


class OddStateCorridor(CorridorEnv):
    """The corridor whose ``state()`` breaks its ``state_space`` in one way (``mode``)."""

    def __init__(self, mode: str) -> None:
        super().__init__(3, 5, 12)
        self.mode = mode
        self.state_space = spaces.Box(0.0, 5.0, (3,), np.float32)

    def state(self) -> np.ndarray | None:
        if self.mode == "none":
            return None
        if self.mode == "shape":
            return np.zeros(5, np.float32)
        return np.array([np.nan if self._steps == 2 else 0.0, 0.0, 0.0], np.float32)


@pytest.mark.parametrize("mode, error, message", [
    ("none", EnvError, r"OddStateCorridor breaks the PettingZoo Parallel API at step 0 of its episode: state\(\) returned None, its state_space \(3,\)"),
    ("shape", EnvError, r"state\(\) returned shape \(5,\), its state_space \(3,\)"),
    ("nan", NonFiniteError, r"the environment returned a non-finite global state \(nan, its state\(\)\) in env copy 0"),
])
def test_a_state_that_breaks_its_state_space_or_is_not_finite_is_named(mode, error, message):
    """MAPPO's critic reads the state: one of the wrong shape, None or NaN stops the run
    naming state() (a wrong shape once reached the critic as a size mismatch of a matmul,
    a NaN as a diverging loss)."""
    config = build_config({"preset": f"odd-state-{mode}", "env": {"name": "corridor"}, **SHORT, "on_policy": {"algo": "mappo", "rollout_length": 8}})
    run = build_run(config, None, Factories(env=EnvFactory(OddStateCorridor, {"mode": mode})), verbose=False)
    with pytest.raises(error, match=message):
        run.train()
    run.close()


def test_an_episode_longer_than_qmix_stores_is_named_by_its_config_key():
    """Checked before training where the env declares its limit (max_cycles in its
    settings); found at the first longer episode otherwise, naming the key either way."""
    pytest.importorskip("mpe2")
    with pytest.raises(ConfigError, match=r"qmix\.max_episode_length=10 steps, but episodes of mpe2\.simple_spread_v3 last up to its max_cycles=25: set qmix\.max_episode_length=25 or more"):
        build_config({"env": {"name": "mpe2.simple_spread_v3", "settings": {"max_cycles": 25}}, **SHORT, **QMIX,
                      "qmix": {**QMIX["qmix"], "max_episode_length": 10}})
    config = build_config({"preset": "long", "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 5, "max_steps": 12}}, **SHORT,
                           "qmix": {**QMIX["qmix"], "max_episode_length": 5, "mixer": "vdn"}})
    run = build_run(config, None, verbose=False)
    with pytest.raises(ConfigError, match=r"policy 'runner': an episode ran past qmix\.max_episode_length=5 steps.*at the env's episode limit or more"):
        run.train()
    run.close()


def test_copies_of_a_discrete_gymnasium_env_train_with_dqn():
    """K copies of CartPole are K DQN agents; an actor-critic is refused with the reason."""
    config = build_config({"preset": "cartpole", "env": {"name": "CartPole-v1", "settings": {"n_agents": 2}}, **SHORT,
                           "model": {"hiddens": [32], "head_hidden": 32}, "dqn": {"learning_starts": 100, "buffer_size": 1000}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert run.venue.venv.groups[0].n_actions == 2 and rows[-1]["updates"] > 0 and np.isfinite(rows[-1]["td_loss"])
    with pytest.raises(ConfigError, match=r"td3 applies to continuous actions; CartPole-v1 has discrete actions \(a2c, dqn, maddpg, mappo, masac, ppo, qmix, seac act on them: train one of them\)"):
        build_config({"env": {"name": "CartPole-v1"}, "actor_critic": {"algo": "td3"}})


def test_observations_neither_images_nor_flat_are_flattened_and_said_so(capsys):
    pytest.importorskip("pygame")
    config = build_config({"preset": "kaz", "env": {"name": "pettingzoo.butterfly.knights_archers_zombies_v11"}, **SHORT,
                           "total_steps": 300, "model": {"hiddens": [32], "head_hidden": 32}, "dqn": {"learning_starts": 100, "buffer_size": 1000}})
    run = build_run(config, None, verbose=True)
    rows = run.train()
    run.close()
    groups = {g.name: (g.flattened, g.obs_shape) for g in run.venue.venv.groups}
    assert groups == {"archer": ((27, 5), (135,)), "knight": ((27, 5), (135,))} and rows[-1]["updates"] > 0
    assert "note: archer's observations (27, 5) are flattened to (135,)" in capsys.readouterr().out
