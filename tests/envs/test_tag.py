"""``simple-tag`` against the installed ``mpe2.simple_tag_v3``, output by output: both groups'
observations, rewards, truncations and the state over several seeds, random actions of both
kinds and starts crowded so that predators catch prey and prey leave the field, agents
touching obstacles; and its runs through the config with a learner per group."""

from pathlib import Path

import numpy as np
import pytest

from mpe2_lockstep import step_both
from relayrl.envs.tag import TagVectorEnv
from relayrl.experiment import build_config, build_run
from relayrl.experiment.presets import config_dict


def _start_from(ours: TagVectorEnv, game: int, reference, start: str) -> None:
    """Game ``game`` of ours takes the reference's world after its reset: as drawn, with
    every agent crowded near the centre (catches), or with the prey at the field's edge."""
    world = reference.unwrapped.world
    for agent in world.agents:
        if start == "crowded":
            agent.state.p_pos = agent.state.p_pos * 0.1
        if start == "edge" and not agent.adversary:
            agent.state.p_pos = np.sign(agent.state.p_pos) * 0.95
    ours.bodies.pos[game] = [a.state.p_pos for a in world.agents]
    ours.bodies.vel[game] = 0.0
    ours.targets[game] = [lm.state.p_pos for lm in world.landmarks]
    ours.frames[game] = 0


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("sides", [(3, 1, 2), (2, 2, 1)])
def test_every_output_equals_mpe2s(continuous, sides):
    from mpe2 import simple_tag_v3

    adversaries, good, obstacles = sides
    settings = {"num_adversaries": adversaries, "num_good": good, "num_obstacles": obstacles, "continuous_actions": continuous}
    games, cycles = 6, 25
    ours = TagVectorEnv(games, max_cycles=cycles, **settings)
    ours.reset(0)
    references = [simple_tag_v3.parallel_env(max_cycles=cycles, **settings) for _ in range(games)]
    for g, reference in enumerate(references):
        reference.reset(seed=10 * adversaries + g)
        _start_from(ours, g, reference, ("drawn", "crowded", "edge")[g % 3])
    rng = np.random.default_rng(adversaries)
    caught = edge = bounced = 0
    for t in range(cycles):
        if continuous:
            actions = [rng.uniform(0, 1, (games, n, 5)).astype(np.float32) for n in (adversaries, good)]
        else:
            actions = [rng.integers(0, 5, (games, n)) for n in (adversaries, good)]
        rewards_of_games, over = step_both(ours, references, actions)
        bounced += int((ours.distances() < ours.bodies.size[:, None] + 0.2).sum())  # agents inside an obstacle's reach
        for rewards in rewards_of_games:
            prey = [rewards[a] for a in references[0].possible_agents[adversaries:]]
            caught += rewards[references[0].possible_agents[0]] > 0
            edge += any(0 > r > -10 or -10 > r > -20 for r in prey)
        assert over.tolist() == [t == cycles - 1] * games
    assert caught > 0 and edge > 0 and bounced > 0, "the check covered catches, the edge penalty and obstacles"


def test_groups_shapes_and_bad_actions():
    env = TagVectorEnv(4, max_cycles=3)
    hunters, prey = env.reset(1)
    assert hunters.obs.shape == (4, 3, 16) and prey.obs.shape == (4, 1, 14) and hunters.state.shape == (4, 62)
    assert [spec.name for spec in env.groups] == ["adversary", "agent"]
    for _ in range(3):
        steps, over = env.step([np.zeros((4, 3), np.int64), np.zeros((4, 1), np.int64)])
    assert over.all() and all(step.truncated.all() for step in steps)
    episodes = env.drain_episodes()
    assert episodes.lengths == [3] * 4 and all(len(r) == 2 for r in episodes.returns)
    with pytest.raises(ValueError, match=r"integer moves in \[0, 5\)"):
        env.step([np.full((4, 3), 5), np.zeros((4, 1), np.int64)])
    with pytest.raises(ValueError, match="two groups"):
        env.step([np.zeros((4, 3), np.int64)])


def test_a_saved_state_continues_exactly():
    env = TagVectorEnv(3, continuous_actions=True)
    env.reset(4)
    rng = np.random.default_rng(0)

    def actions():
        return [rng.uniform(0, 1, (3, 3, 5)), rng.uniform(0, 1, (3, 1, 5))]

    for _ in range(30):
        env.step(actions())
    saved = env.get_state()
    chosen = [actions() for _ in range(30)]
    first = [env.step(a)[0][1].next_obs for a in chosen]
    other = TagVectorEnv(3, continuous_actions=True)
    other.set_state(saved)
    second = [other.step(a)[0][1].next_obs for a in chosen]
    np.testing.assert_array_equal(np.stack(first), np.stack(second))


def test_the_qmix_against_ppo_example_trains_both_groups(tmp_path):
    """``examples/tag_qmix_vs_ppo.yaml``: QMIX predators, a PPO prey, each group reported."""
    config = config_dict(str(Path(__file__).resolve().parents[2] / "examples" / "tag_qmix_vs_ppo.yaml"))
    config.update({"total_steps": 800, "report_interval": 400, "eval": {"interval": 0}, "checkpoint_interval": 800})
    config["qmix"].update({"batch_size": 4})
    run = build_run(build_config(config), tmp_path)
    try:
        run.train()
    finally:
        run.close()
    assert {pid: learner.algo for pid, learner in run.learners.items()} == {"adversary": "qmix", "agent": "ppo"}
    header, *rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert len(rows) == 2 and "episode_reward_mean/adversary" in header and "episode_reward_mean/agent" in header
    with pytest.raises(ValueError, match="terminate_on_success.*allowed here: continuous_actions, max_cycles, num_adversaries, num_good, num_obstacles$"):
        build_config({"env": {"name": "simple-tag", "settings": {"terminate_on_success": True}}, "qmix": {}})
