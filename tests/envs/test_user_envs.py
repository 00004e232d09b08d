"""Environments users bring: any installed PettingZoo Parallel env by its module path, any
Gymnasium id by name, and the AI Arena list interface adapted both ways (PettingZoo's own
API tests run on the adapters)."""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test

from relayrl.core.errors import ConfigError
from relayrl.envs import EnvFactory
from relayrl.envs.registry import ENVS
from relayrl.envs.list_interface import ListFace, ParallelFace
from relayrl.envs.corridor import CorridorEnv
from relayrl.experiment import Factories, build_run, build_config
from relayrl.nets import StackedLinear

SHORT = {"total_steps": 400, "report_interval": 200, "checkpoint_interval": 400, "eval": {"interval": 400, "episodes": 1}}


class Tag:
    """A two-entity game with the list interface, Gym style: each entity sees the distance
    to a moving mark and is rewarded for moving toward it; 20 steps a shared episode."""

    def __init__(self) -> None:
        self.observation_space = [spaces.Box(-10.0, 10.0, (2,), np.float32)] * 2
        self.action_space = [spaces.Discrete(3)] * 2
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> list[np.ndarray]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.position, self.mark, self.t = np.zeros(2), float(self.rng.integers(-3, 4)), 0
        return self._obs()

    def _obs(self) -> list[np.ndarray]:
        return [np.array([self.mark - p, self.t / 20], np.float32) for p in self.position]

    def step(self, actions: list[int]) -> tuple[list[np.ndarray], list[float], bool, list[dict]]:
        before = np.abs(self.mark - self.position)
        self.position += np.array(actions) - 1
        self.t += 1
        rewards = (before - np.abs(self.mark - self.position)).tolist()
        return self._obs(), rewards, self.t >= 20, [{}, {}]


def _arena_tag(**_: object) -> ParallelFace:
    return ParallelFace(Tag(), prefix="tagger")


@pytest.mark.parametrize("module", [None, "mpe2.simple_spread_v3"])
def test_the_list_interface_round_trip_passes_pettingzoo_api_tests(module):
    if module is None:
        make = lambda: CorridorEnv(3, 4, 12)  # noqa: E731
    else:
        make = pytest.importorskip(module).parallel_env
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo warns where an agent misses a field
        parallel_api_test(ParallelFace(ListFace(make())), num_cycles=200)
        parallel_api_test(_arena_tag(), num_cycles=100)


def test_the_round_trip_steps_like_the_env_itself():
    raw, wrapped = CorridorEnv(3, 5, 9), ParallelFace(ListFace(CorridorEnv(3, 5, 9)), prefix="runner")
    rng = np.random.default_rng(1)
    for episode in range(3):
        a, _ = raw.reset(seed=episode)
        b, _ = wrapped.reset(seed=episode)
        while raw.agents:
            assert raw.agents == wrapped.agents and a.keys() == b.keys()
            actions = {agent: int(rng.integers(0, 2)) for agent in raw.agents}
            a, ra, ta, ua, _ = raw.step(actions)
            b, rb, tb, ub, _ = wrapped.step(actions)
            assert (ra, ta, ua) == (rb, tb, ub)
            for agent in a:
                np.testing.assert_array_equal(a[agent], b[agent])
        assert not wrapped.agents


def test_a_list_interface_env_trains():
    config = build_config({"preset": "tag", "env": {"name": "corridor"}, **SHORT, "model": {"hiddens": [16], "head_hidden": 16},
                           "dqn": {"learning_starts": 100, "buffer_size": 1000, "batch_size": 8}})
    run = build_run(config, None, Factories(env=EnvFactory(_arena_tag)), verbose=False)
    rows = run.train()
    run.close()
    assert [(g.name, g.n_agents) for g in run.venue.venv.groups] == [("tagger", 2)]
    assert rows[-1]["env_steps"] == 400 and rows[-1]["updates"] > 0 and np.isfinite(rows[-1]["eval_reward_mean"])


def test_a_pettingzoo_env_by_module_path_trains_with_sharing():
    pytest.importorskip("mpe2")
    config = build_config({"preset": "spread", "env": {"name": "mpe2.simple_spread_v3", "settings": {"max_cycles": 25}}, **SHORT,
                           "model": {"hiddens": [32], "head_hidden": 32}, "sharing": {"select": "quantile"},
                           "dqn": {"learning_starts": 100, "buffer_size": 1000}})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    assert [(g.name, g.n_agents, g.n_actions) for g in run.venue.venv.groups] == [("agent", 3, 5)]
    assert sum(r["transitions_relayed"] for r in rows) > 0 and rows[-1]["episodes"] > 0


def test_box_actions_of_a_pettingzoo_env_train_an_actor_critic():
    pytest.importorskip("Box2D")
    config = build_config({"preset": "walkers", "env": {"name": "pettingzoo.sisl.multiwalker_v9", "settings": {"n_walkers": 2, "max_cycles": 50}},
                           **SHORT, "actor_critic": {"random_steps": 100, "batch_size": 32, "buffer_size": 1000, "hidden": [32]}})
    run = build_run(config, None, verbose=False)
    (group,) = run.venue.venv.groups
    assert group.continuous and group.action_shape == (4,) and group.n_agents == 2
    actions, _ = run.policies[group.name].act(np.zeros((1, 2, *group.obs_shape), np.float32), None, 10_000)
    assert actions.shape == (1, 2, 4) and np.all(np.abs(actions) <= 1.0)
    rows = run.train()
    run.close()
    assert rows[-1]["updates"] == 400 - 100 + 1 and np.isfinite(rows[-1]["td_loss"])  # from the step reaching random_steps on


def test_a_gymnasium_id_is_an_env_name():
    config = build_config({"env": {"name": "Pendulum-v1", "settings": {"n_agents": 3}}, "actor_critic": {}})
    assert (config.env.name, config.env.settings.env_id, config.env.settings.n_agents) == ("gym", "Pendulum-v1", 3)


def test_a_gymnasium_id_of_a_users_module_is_named_with_the_module(tmp_path):
    """``testenvs.target`` registers ``Target-v0`` when imported: named ``module:Id`` (as
    ``gymnasium.make`` takes it) the id trains, and a fresh process (a Ray runner's, a
    resumed run's) makes it by that name alone; an id the module does not register is
    refused with the form to use."""
    import subprocess

    config = build_config({
        "preset": "target-td3", "env": {"name": "testenvs.target:Target-v0", "settings": {"n_agents": 1}},
        "actor_critic": {"algo": "td3", "random_steps": 50}, **SHORT,
    })
    assert (config.env.name, config.env.settings.env_id) == ("gym", "testenvs.target:Target-v0")
    run = build_run(config, tmp_path, verbose=False)
    run.train()
    run.close()
    assert run.reporter.history[-1]["env_steps"] == 400
    fresh = "from relayrl.envs.gym_copies import GymCopiesEnv; print(GymCopiesEnv('testenvs.target:Target-v0', 2).groups[0].action_high)"
    done = subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True, env={"PYTHONPATH": str(Path(__file__).parents[1])}, timeout=120)
    assert done.returncode == 0 and "10.0" in done.stdout, done.stderr[-2000:]
    with pytest.raises(ConfigError, match="'testenvs.target:Targt-v0' is not a registered Gymnasium env .* an id that your own module registers is named with the module"):
        build_config({"env": {"name": "testenvs.target:Targt-v0"}, "actor_critic": {}})


@pytest.mark.parametrize("kind", ["multi", "start"])
def test_k_copies_of_a_gymnasium_env_of_multi_discrete_or_offset_actions_learn_the_rewarded_one(kind, tmp_path):
    """``Choices-v0``: MultiDiscrete([3, 2], start=[1, 0]) actions are one Discrete over their 6
    combinations, Discrete(3, start=1) actions reach the env as 1..3 (the env refuses any
    other); DQN learns the rewarded choice in both (greedy 10 of 10 per agent)."""
    config = build_config({
        "preset": "choices-dqn", "env": {"name": "testenvs.target:Choices-v0", "settings": {"n_agents": 2, "kwargs": {"kind": kind}}},
        "total_steps": 800, "report_interval": 800, "eval": {"interval": 800, "episodes": 2}, "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 800, "batch_size": 8, "epsilon_steps": 400, "lr": 3e-3},
    })
    run = build_run(config, tmp_path, verbose=False)
    rows = run.train()
    run.close()
    assert run.venue.venv.groups[0].n_actions == (6 if kind == "multi" else 3)
    assert rows[-1]["eval_reward_mean"] == 10


def test_a_multi_agent_gymnasium_env_of_tuple_spaces_with_multi_discrete_actions_learns_the_rewarded_choices(tmp_path):
    """``TupleChoices-v0``: a user's Gymnasium env with Tuple spaces (one entry per agent, as
    LBF's and RWARE's) whose agents take MultiDiscrete([3, 2], start=[1, 0]) choices: each
    agent acts among the 6 combinations, the env receives the choices with their starts,
    and DQN learns the rewarded ones (greedy 10 of 10 per agent, 20 for the team)."""
    config = build_config({
        "preset": "tuple-choices-dqn", "env": {"name": "testenvs.target:TupleChoices-v0", "num_envs": 2},
        "total_steps": 1200, "report_interval": 600, "eval": {"interval": 1200, "episodes": 2}, "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 1200, "batch_size": 8, "epsilon_steps": 600, "lr": 3e-3},
    })
    run = build_run(config, tmp_path, verbose=False)
    rows = run.train()
    run.close()
    (group,) = run.venue.venv.groups
    assert (group.n_actions, len(group.agent_ids)) == (6, 2)
    assert rows[-1]["eval_reward_mean"] == 20


def test_qmix_on_k_copies_of_a_gymnasium_env_is_refused_before_training(tmp_path):
    """Each copy ends and restarts its episode apart, so a learner of whole team episodes would
    never update (it ran 400 env steps of CartPole with 0 updates): refused, naming dqn."""
    config = build_config({"preset": "cartpole-vdn", "env": {"name": "CartPole-v1"}, "total_steps": 400, "eval": {"interval": 0},
                           "qmix": {"batch_size": 2, "buffer_size": 20, "max_episode_length": 500, "mixer": "vdn"}})
    with pytest.raises(ConfigError, match=r"'agent': qmix and its family learn from whole episodes of a team, and K copies .* train dqn"):
        build_run(config, tmp_path / "run", verbose=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "name, message",
    [
        ("nope", "unknown env 'nope': use a built-in"),
        ("pettingzoo.nope_v1", "pettingzoo.nope_v1 cannot be imported"),
        ("mpe2.simple_spread_v1", r"mpe2.simple_spread_v1 cannot be imported .*: the installed mpe2 has mpe2.simple_spread_v3 \(an env's version suffix"),
        ("mpe2.simple_spred_v3", r"did you mean mpe2.simple_spread_v3 or"),
        ("mpe2.no_such_env", r"mpe2 has no module no_such_env; its modules: .*simple_adversary_v3, .*simple_spread_v3"),
        ("numpy.linalg", "numpy.linalg has no parallel_env"),
        ("FrozenLake-v7", "'FrozenLake-v7' is not a registered Gymnasium id, FrozenLake-v1 is: set env.name to it"),
    ],
)
def test_an_env_name_that_is_not_one_is_named_with_the_choices(name, message):
    with pytest.raises(ConfigError, match=message):
        build_config({"env": {"name": name}})


def test_a_module_of_the_working_directory_is_an_env_name(tmp_path, monkeypatch, capsys):
    """``my_env.py`` with a ``parallel_env()`` beside the command: ``relayrl train`` finds it by
    its one-word name (the command puts the working directory on the import path, as
    ``python -m`` does), also in subprocess env copies; a misspelt one-word name is refused
    with the choices."""
    from relayrl.cli import main

    (tmp_path / "my_cues_env.py").write_text("from testenvs.cues import parallel_env  # a user's module\n")
    (tmp_path / "run.yaml").write_text(
        "env: {name: my_cues_env, num_envs: 2, vector: subproc}\ntotal_steps: 200\nreport_interval: 200\neval: {interval: 0}\n"
        "dqn: {learning_starts: 50, buffer_size: 200, batch_size: 8}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])  # as the console script starts
    assert main(["train", "run.yaml", "--out", "runs"]) == 0
    (metrics,) = (tmp_path / "runs").glob("*/0/metrics.csv")
    assert metrics.read_text().count("\n") == 2  # the header and the row at 200 env steps
    assert main(["train", "run.yaml", "env.name=my_cues_evn", "--out", "runs"]) == 2
    assert "unknown env 'my_cues_evn'" in capsys.readouterr().err


class _TinyQ(torch.nn.Module):
    """A user's Q-network: ``[P, B, obs] -> [P, B, actions]``."""

    def __init__(self, n_sets: int, obs_shape: tuple[int, ...], n_actions: int) -> None:
        super().__init__()
        self.layer = StackedLinear(n_sets, obs_shape[0], n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.layer(obs.float())


@pytest.mark.parametrize(("section", "algo"), [({"on_policy": {"algo": "ppo"}}, "ppo"), ({"qmix": {"mixer": "vdn"}}, "qmix")])
def test_a_network_factory_that_the_learner_would_not_use_is_refused(section, algo):
    """A user's network is built by DQN (it trains with it); learners that build their own
    networks refuse it before training instead of dropping it without a word."""
    env = EnvFactory(CorridorEnv, {"n_agents": 2, "length": 3, "max_steps": 8})
    dqn = build_run(build_config({"preset": "mine", "env": {"name": "user"}, **SHORT, "dqn": {"learning_starts": 100, "buffer_size": 400}}), None,
                    Factories(env=env, network=_TinyQ), verbose=False)
    assert isinstance(dqn.learners["runner"].algorithm.online, _TinyQ)
    dqn.close()
    with pytest.raises(ConfigError, match=rf"network_factory builds the networks of dqn; {algo} builds its own .*: drop network_factory, or train dqn"):
        build_run(build_config({"preset": "mine", "env": {"name": "user"}, **SHORT, **section}), None, Factories(env=env, network=_TinyQ), verbose=False)


class _PooledQ(_TinyQ):
    """Pools the batch away: one row of Q-values per parameter set."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return super().forward(obs).mean(dim=1)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (_PooledQ, r"network_factory\(2, \(3,\), 2\)'s module returned shape \(2, 2\) torch.float32 for observations of shape \(2, 2, 3\); "
                   r"DQN needs float Q-values \[P, B, A\] = \(2, 2, 2\)"),
        (_TinyQ, None),
        (lambda p, shape, a: torch.nn.Linear(shape[0], a), r"network_factory\(2, \(3,\), 2\)'s parameter weight mixes the parameter sets"),
        (lambda p, shape, a: torch.nn.Sequential(torch.nn.Linear(shape[0], 5), torch.nn.Linear(5, a)),
         r"network_factory\(2, \(3,\), 2\)'s parameter 0.weight has shape \(5, 3\); every parameter needs the parameter sets' axis first \(2, ...\)"),
        (lambda p, shape, a: torch.nn.Linear(5, a), r"network_factory\(2, \(3,\), 2\)'s module failed on observations of shape \(2, 2, 3\) .*mat1 and mat2"),
        (lambda p, shape, a: (lambda obs: obs), r"returned function, not a torch.nn.Module with parameters"),
    ],
)
def test_a_network_factory_is_checked_against_the_shapes_it_will_get_before_training(factory, message):
    env = EnvFactory(CorridorEnv, {"n_agents": 2, "length": 3, "max_steps": 8})
    config = build_config({"preset": "mine", "env": {"name": "user"}, **SHORT, "dqn": {"learning_starts": 100, "buffer_size": 400}})
    if message is None:
        build_run(config, None, Factories(env=env, network=factory), verbose=False).close()
        return
    with pytest.raises(ConfigError, match=message):
        build_run(config, None, Factories(env=env, network=factory), verbose=False)


def test_env_groups_put_agents_whose_names_do_not_group_them_in_one_group():
    """alice, bob and carol are three groups of one by their names; ``env.groups`` makes them
    one team, whose MAPPO critic reads all three (a run trains on it); an agent the env does
    not have, or agents of unequal spaces, are refused naming them."""
    base = {"env": {"name": "testenvs.named"}, "on_policy": {"algo": "mappo", "critic_input": "joint_obs", "rollout_length": 10, "hidden": [16]},
            "total_steps": 100, "report_interval": 100, "eval": {"interval": 0}}
    apart = build_run(build_config(base), None, verbose=False)
    assert [g.name for g in apart.venue.venv.groups] == ["alice", "bob", "carol"]
    apart.close()
    team = build_run(build_config({**base, "env": {**base["env"], "groups": {"team": ["alice", "bob", "carol"]}}}), None, verbose=False)
    assert [(g.name, g.agent_ids) for g in team.venue.venv.groups] == [("team", ("alice", "bob", "carol"))]
    rows = team.train()
    team.close()
    assert rows[-1]["env_steps"] == 100
    with pytest.raises(ConfigError, match=r"env\.groups names agent\(s\) \['dave'\], which the env does not have; its possible_agents: \['alice', 'bob', 'carol'\]"):
        build_run(build_config({**base, "env": {**base["env"], "groups": {"team": ["alice", "dave"]}}}), None, verbose=False)
    wide = {"name": "testenvs.named", "settings": {"carol_wide": True}, "groups": {"team": ["alice", "bob", "carol"]}}
    with pytest.raises(ConfigError, match=r"env\.groups\.team lists agents of different spaces: \['alice', 'bob'\] and \['carol'\] differ"):
        build_run(build_config({**base, "env": wide}), None, verbose=False)
    batched = ENVS["simple-spread"].factory({})  # a batched env handed over in Python keeps its groups too
    with pytest.raises(ConfigError, match=r"env\.groups regroups the agents of an env relayrl wraps agent by agent; user is batched"):
        build_run(build_config({**base, "env": {"name": "user", "groups": {"team": ["agent_0"]}}}), None, Factories(env=batched), verbose=False)
    with pytest.raises(ConfigError, match=r"env\.groups: Extra inputs are not permitted -- unknown key"):  # a built-in env keeps its groups
        build_config({**base, "env": {"name": "simple-spread", "groups": {"team": ["agent_0"]}}})


def _short_corridor() -> CorridorEnv:
    return CorridorEnv(2, 3, 6)


def _long_corridor() -> CorridorEnv:
    return CorridorEnv(2, 5, 15)


def test_runs_of_other_env_factories_train_apart_and_a_function_is_a_factory(tmp_path):
    """Two env makers under one config (``env.name: user``) once shared a run directory, so
    the second returned, or resumed, the first one's networks; a plain function is taken as
    the factory it makes (it was a TypeError of dataclasses.replace)."""
    from relayrl.experiment import train

    config = build_config({"preset": "makers", "env": {"name": "user"}, "total_steps": 100, "eval": {"interval": 0}, "checkpoint_interval": 100,
                           "dqn": {"learning_starts": 50, "buffer_size": 200, "batch_size": 8}, "model": {"hiddens": [8], "head_hidden": 8}})
    short = train(config, tmp_path, env_factory=_short_corridor, verbose=False)
    long = train(config, tmp_path, env_factory=EnvFactory(_long_corridor), verbose=False)
    again = train(config, tmp_path, env_factory=EnvFactory(_short_corridor), verbose=False)
    assert long.run_dir.path != short.run_dir.path == again.run_dir.path
    assert again.counters.env_steps == 100
    with pytest.raises(ConfigError, match=r"env_factory must be a relayrl\.envs\.EnvFactory or a function that makes a PettingZoo ParallelEnv"):
        train(config, tmp_path, env_factory="corridor")


class _Options:
    """An argument whose repr holds its address, which changes with every process."""


def _corridor_with(options: _Options) -> CorridorEnv:
    return CorridorEnv(2, 3, 6)


def test_an_env_factory_of_an_object_argument_finds_its_run_again(tmp_path):
    import functools

    from relayrl.experiment import train

    config = build_config({"preset": "objects", "env": {"name": "user"}, "total_steps": 100, "eval": {"interval": 0}, "checkpoint_interval": 100,
                           "dqn": {"learning_starts": 50, "buffer_size": 200, "batch_size": 8}, "model": {"hiddens": [8], "head_hidden": 8}})
    first = train(config, tmp_path, env_factory=functools.partial(_corridor_with, _Options()), verbose=False)
    again = train(config, tmp_path, env_factory=functools.partial(_corridor_with, _Options()), verbose=False)
    assert first.run_dir.path == again.run_dir.path
