"""Gymnasium multi-agent envs with Tuple spaces (Level-Based Foraging, the multi-robot
warehouse) as PettingZoo Parallel envs: PettingZoo's API tests, LBF's valid actions as
action masks, step limits as truncations and collected food as termination, and a short
relayrl run on LBF by the env's Gymnasium id."""

import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from relayrl.core.errors import ConfigError
from relayrl.envs.gym_multiagent import GymMultiAgentEnv, multiagent_env_id
from relayrl.envs.registry import make_env_factory
from relayrl.experiment import build_config, build_run

LBF = "Foraging-8x8-2p-2f-v3"
RWARE = "rware-tiny-2ag-v2"
NONE, NORTH, SOUTH, WEST, EAST, LOAD = range(6)  # LBF's actions


@pytest.fixture
def lbf():
    pytest.importorskip("lbforaging")


@pytest.fixture
def rware():
    pytest.importorskip("rware")


@pytest.mark.parametrize(
    "env_id, kwargs, package",
    [
        (LBF, {}, "lbforaging"),
        ("Foraging-2s-8x8-3p-2f-coop-v3", {}, "lbforaging"),
        (RWARE, {"max_steps": 60}, "rware"),
        (RWARE, {"max_steps": 60, "observation_type": "image"}, "rware"),
    ],
)
def test_pettingzoo_api_tests_pass(env_id, kwargs, package):
    pytest.importorskip(package)
    env = GymMultiAgentEnv(env_id, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo warns where an agent misses a field
        parallel_api_test(env, num_cycles=200)
    assert env.possible_agents == [f"agent_{i}" for i in range(len(env.possible_agents))]
    assert env.state().shape == env.state_space.shape and env.state().dtype == np.float32


@pytest.mark.parametrize("env_id, kwargs, package", [(LBF, {}, "lbforaging"), (RWARE, {"max_steps": 40}, "rware")])
def test_steps_like_the_gymnasium_env_itself(env_id, kwargs, package):
    pytest.importorskip(package)
    raw, env = gym.make(env_id, disable_env_checker=True, **kwargs), GymMultiAgentEnv(env_id, kwargs)
    rng = np.random.default_rng(0)
    for seed in (3, 4):
        ref, _ = raw.reset(seed=seed)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            for agent, expected in zip(env.possible_agents, ref):
                seen = obs[agent]["observation"] if isinstance(obs[agent], dict) else obs[agent]
                np.testing.assert_array_equal(seen, expected)
            joint = [int(a) for a in rng.integers(0, raw.action_space[0].n, len(ref))]
            ref, ref_rewards, done, _, _ = raw.step(joint)
            obs, rewards, _, _, _ = env.step(dict(zip(env.agents, joint)))
            assert list(rewards.values()) == pytest.approx([float(r) for r in ref_rewards])
            assert (not env.agents) == done


def _expected_lbf_mask(obs: np.ndarray, n_food: int, size: int) -> np.ndarray:
    """LBF's rules from a fully observing agent's own observation: a move is valid inside
    the field and off food; loading needs food beside (other agents block nothing here)."""
    foods = {(int(obs[3 * i]), int(obs[3 * i + 1])) for i in range(n_food) if obs[3 * i + 2] > 0}
    row, col = int(obs[3 * n_food]), int(obs[3 * n_food + 1])
    targets = {NORTH: (row - 1, col), SOUTH: (row + 1, col), WEST: (row, col - 1), EAST: (row, col + 1)}
    mask = np.zeros(6, np.int8)
    mask[NONE] = 1
    for action, (r, c) in targets.items():
        mask[action] = 0 <= r < size and 0 <= c < size and (r, c) not in foods
    mask[LOAD] = any(cell in foods for cell in targets.values())
    return mask


def test_lbf_action_masks_are_its_valid_actions(lbf):
    env = GymMultiAgentEnv(LBF, {"max_episode_steps": 200})
    game = env.env.unwrapped
    checked, loads_allowed = 0, 0
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        while env.agents:
            # the env's public list of valid joint actions gives each agent's valid ones
            valid = [{int(joint[i].value) for joint in game.get_valid_actions()} for i in range(len(env.agents))]
            for i, agent in enumerate(env.agents):
                mask = obs[agent]["action_mask"]
                assert mask.dtype == np.int8 and set(np.flatnonzero(mask)) == valid[i]
                np.testing.assert_array_equal(mask, _expected_lbf_mask(obs[agent]["observation"], 2, 8))
                loads_allowed += int(mask[LOAD])
                checked += 1
            actions = {agent: env.action_space(agent).sample(mask=obs[agent]["action_mask"]) for agent in env.agents}
            obs, *_ = env.step(actions)
    assert checked > 400 and loads_allowed > 0


@pytest.mark.parametrize(
    "env_id, kwargs, package",
    [(LBF, {"max_episode_steps": 7}, "lbforaging"), (RWARE, {"max_steps": 7}, "rware"), (RWARE, {"max_steps": 50, "max_inactivity_steps": 7}, "rware")],
)
def test_a_step_limit_truncates_every_agent(env_id, kwargs, package):
    pytest.importorskip(package)
    env = GymMultiAgentEnv(env_id, kwargs)
    env.reset(seed=0)
    for step in range(1, 8):
        assert env.agents == env.possible_agents
        _, rewards, terms, truncs, _ = env.step(dict.fromkeys(env.agents, 0))  # everyone stays put: no food, no delivery
        assert not any(terms.values()) and all(truncs.values()) == (step == 7) and not any(rewards.values())
    assert env.agents == []


def test_collecting_all_food_terminates_with_rewards_summing_to_one(lbf):
    """One level-1 food (every agent can load it alone) fetched by greedy agents: the
    episode terminates, and LBF's normalised rewards of the episode sum to 1."""
    env = GymMultiAgentEnv("Foraging-6x6-2p-1f-v3", {"max_food_level": 1, "max_episode_steps": 100})
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        total, steps = 0.0, 0
        while env.agents:
            actions = {}
            for agent in env.agents:
                seen, mask = obs[agent]["observation"], obs[agent]["action_mask"]
                food, me = seen[:2], seen[3:5]
                if mask[LOAD]:
                    actions[agent] = LOAD
                    continue
                moves = {NORTH: (-1, 0), SOUTH: (1, 0), WEST: (0, -1), EAST: (0, 1)}
                closer = [a for a, d in moves.items() if mask[a] and np.abs(me + d - food).sum() < np.abs(me - food).sum()]
                actions[agent] = int(rng.choice(closer or [a for a in moves if mask[a]]))
            obs, rewards, terms, truncs, _ = env.step(actions)
            total += sum(rewards.values())
            steps += 1
        assert all(terms.values()) and not any(truncs.values()) and steps < 100
        assert total == pytest.approx(1.0)


def test_the_relayrl_adapter_hands_up_masks_state_and_truncation(lbf):
    adapter = make_env_factory("gym-multiagent", {"env_id": LBF, "kwargs": {"max_episode_steps": 5}}).adapter()
    (group,) = adapter.groups
    assert (group.name, group.agent_ids, group.obs_shape, group.n_actions, group.masked, group.state_shape) == (
        "agent", ("agent_0", "agent_1"), (12,), 6, True, (24,)
    )
    (first,) = adapter.reset(seed=0)
    assert first.obs.shape == (2, 12) and first.obs.dtype == np.float32 and first.alive.all()
    assert first.action_mask.shape == (2, 6) and first.action_mask[:, NONE].all()
    np.testing.assert_array_equal(first.state, first.obs.reshape(-1))
    for step in range(5):
        (out,), over = adapter.step([np.zeros(2, np.int64)])
        assert out.reward.shape == (2,) and not out.terminated.any()
        assert out.truncated.all() == over == (step == 4)


def test_an_rware_adapter_gives_images_channels_last(rware):
    adapter = make_env_factory("gym-multiagent", {"env_id": RWARE, "kwargs": {"observation_type": "image", "reward_type": "global"}}).adapter()
    (group,) = adapter.groups
    assert group.obs_shape == (3, 3, 5) and group.n_actions == 5 and not group.masked  # 3x3 sensor view, 5 layers
    (first,) = adapter.reset(seed=0)
    assert first.obs.shape == (2, 3, 3, 5) and first.action_mask is None


def test_names_of_multiagent_envs(lbf, rware):
    assert multiagent_env_id(LBF) and multiagent_env_id(RWARE) and multiagent_env_id(f"rware:{RWARE}")
    assert not multiagent_env_id("CartPole-v1") and not multiagent_env_id("gymnasium.envs.classic_control:CartPole-v1")
    with pytest.raises(ValueError, match="not a registered Gymnasium env"):
        multiagent_env_id("Foraging-8x8-2p-2f-v2")


def test_a_missing_package_names_the_extra(lbf, monkeypatch):
    monkeypatch.setitem(sys.modules, "lbforaging", None)  # what an env without the extra sees
    with pytest.raises(ValueError, match=r"pip install -c constraints.txt -e '\.\[lbf\]'"):
        multiagent_env_id(LBF)


def test_kwargs_the_env_refuses_fail_with_the_config(lbf, rware):
    with pytest.raises(ConfigError, match="refuses kwargs .*unexpected keyword argument 'nope'"):
        build_config({"env": {"name": "gym-multiagent", "settings": {"env_id": LBF, "kwargs": {"nope": 1}}}})
    with pytest.raises(ConfigError, match=r"kwargs.reward_type='best' is not one of \['global', 'individual', 'two_stage'\]"):
        build_config({"env": {"name": "gym-multiagent", "settings": {"env_id": RWARE, "kwargs": {"reward_type": "best"}}}})


SHORT = {"total_steps": 200, "report_interval": 100, "checkpoint_interval": 200, "eval": {"interval": 200, "episodes": 1},
         "model": {"hiddens": [16], "head_hidden": 16}, "dqn": {"learning_starts": 50, "buffer_size": 500, "batch_size": 8}}


def test_dqn_trains_on_lbf(lbf):
    settings = {"env_id": LBF, "kwargs": {"max_episode_steps": 25}}
    run = build_run(build_config({"env": {"name": "gym-multiagent", "settings": settings}, **SHORT}), None, verbose=False)
    rows = run.train()
    run.close()
    assert [(g.name, g.n_agents, g.n_actions, g.masked) for g in run.venue.venv.groups] == [("agent", 2, 6, True)]
    assert rows[-1]["env_steps"] == 200 and rows[-1]["updates"] > 0 and rows[-1]["episodes"] > 0


def test_a_multiagent_gymnasium_id_is_an_env_name(lbf):
    config = build_config({"env": {"name": LBF, "settings": {"kwargs": {"max_episode_steps": 25}}}})
    assert (config.env.name, config.env.settings.env_id) == ("gym-multiagent", LBF)
