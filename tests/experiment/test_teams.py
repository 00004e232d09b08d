"""Teams: frozen pretrained opponents, co-evolving DDQN opponents, team-only sharing, and
agents or whole teams leaving the episode (paper 000, section 5.3 and appendix C.3)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from relayrl.core.errors import CheckpointError, ConfigError
from relayrl.experiment import Trainer, build_config
from relayrl.experiment.checkpoint import list_checkpoints, load_policies
from relayrl.experiment.trainer import Window

TWO_TEAMS = {"name": "corridor", "settings": {"n_agents": 3, "n_walkers": 2, "length": 4, "max_steps": 12}}


def _config(total: int = 400, **extra) -> dict:
    return {
        "preset": "teams",
        "env": TWO_TEAMS,
        "total_steps": total,
        "report_interval": 200,
        "checkpoint_interval": 400,
        "eval": {"interval": 400, "episodes": 2},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 2000, "batch_size": 8, "epsilon_start": 1.0, "epsilon_steps": 300},
        **extra,
    }


def _params(team) -> list[torch.Tensor]:
    return [p.detach().clone() for p in team.learner.online.parameters()]


def _pretrain(root: Path) -> Path:
    trainer = Trainer(build_config(_config()), root / "pretrain", verbose=False)
    trainer.train()
    trainer.close()
    return root / "pretrain"


def test_teams_are_agent_groups_with_their_own_learners():
    trainer = Trainer(build_config(_config()), None, verbose=False)
    assert [(t.name, t.spec.n_agents, t.role) for t in trainer.teams] == [("runner", 3, "main"), ("walker", 2, "main")]
    assert trainer.teams[0].learner is not trainer.teams[1].learner


def test_frozen_team_loads_the_pretrained_networks_and_never_learns(tmp_path):
    pretrained = load_policies(list_checkpoints(_pretrain(tmp_path) / "checkpoints")[-1])["walker"]
    config = build_config(_config(groups={"walker": {"role": "frozen", "checkpoint": str(tmp_path / "pretrain")}}))
    trainer = Trainer(config, tmp_path / "main", verbose=False)
    walker, runner = trainer.teams[1], trainer.teams[0]
    assert not walker.learns and not hasattr(walker, "replay")
    for p, q in zip(walker.learner.online.state_dict().values(), pretrained["online"].values()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    before_walker, before_runner = _params(walker), _params(runner)
    trainer.train()
    for p, q in zip(_params(walker), before_walker):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert any(not torch.equal(p, q) for p, q in zip(_params(runner), before_runner))
    assert trainer.config.reported_group() == "runner"
    assert "frozen_teams_from" in (tmp_path / "main" / "provenance.yaml").read_text()


def test_pretrained_preset_that_was_not_run_is_a_clear_error(tmp_path):
    config = build_config({**_config(), "env": {"name": "battle"}, "dqn": {"buffer_size": 100},
                           "groups": {"red": {"role": "frozen", "pretrained": "battle-pretrain"}}})
    with pytest.raises(CheckpointError, match="relayrl train battle-pretrain --seed 0"):
        Trainer(config, tmp_path / "battle-x" / "0", verbose=False)


@pytest.mark.parametrize(
    "groups, message",
    [
        ({"red": {}}, "not teams of corridor"),
        ({"runner": {"role": "frozen"}}, "exactly one of checkpoint"),
        ({"runner": {"role": "frozen", "checkpoint": "x"}, "walker": {"role": "frozen", "checkpoint": "x"}}, "nothing would learn"),
        ({"runner": {"role": "ddqn", "checkpoint": "x"}}, "role=frozen only"),
    ],
)
def test_bad_team_settings_fail_before_training(groups, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_config(groups=groups))


def test_co_evolving_opponents_learn_without_sharing():
    """Runners share everything within their team; the co-evolving walkers train plain DDQN."""
    config = build_config(_config(sharing={"select": "all"}, groups={"walker": {"role": "ddqn"}}))
    trainer = Trainer(config, None, verbose=False)
    runner, walker = trainer.teams
    assert walker.learns and not walker.sharing_on and runner.sharing_on
    before = _params(walker)
    trainer._start()
    expected = {t.name: np.zeros(t.spec.n_agents, np.int64) for t in trainer.teams}
    for _ in range(10):  # 40 env steps
        for team, steps in zip(trainer.teams, trainer._collect()):
            expected[team.name] += steps["valid"].sum(axis=(0, 1))
            team.store(steps)
    # share-all: each runner holds every runner's transitions; walkers only their own
    np.testing.assert_array_equal(runner.replay.size, [expected["runner"].sum()] * 3)
    np.testing.assert_array_equal(walker.replay.size, expected["walker"])
    trainer.train()
    assert any(not torch.equal(p, q) for p, q in zip(_params(walker), before))


def test_no_transitions_from_agents_that_left_even_when_a_whole_team_is_gone():
    trainer = Trainer(build_config(_config()), None, verbose=False)
    trainer._start()
    expected = {t.name: np.zeros(t.spec.n_agents, np.int64) for t in trainer.teams}
    team_gone_while_other_plays = 0
    for _ in range(100):  # 400 env steps, ~40 episodes of random walkers
        steps = trainer._collect()
        runners, walkers = (s["valid"].reshape(len(s["valid"]), -1) for s in steps)
        team_gone_while_other_plays += int((runners.any(axis=1) & ~walkers.any(axis=1)).sum())
        for team, team_steps in zip(trainer.teams, steps):
            expected[team.name] += team_steps["valid"].sum(axis=(0, 1))
            team.store(team_steps)
    assert team_gone_while_other_plays > 0
    for team in trainer.teams:
        np.testing.assert_array_equal(team.replay.size, expected[team.name])


def test_per_team_metrics_are_written(tmp_path):
    trainer = Trainer(build_config(_config()), tmp_path, verbose=False)
    rows = trainer.train()
    assert {"episode_reward_mean/runner", "episode_reward_mean/walker", "td_loss/walker"} <= set(rows[-1])
    assert rows[-1]["episode_reward_mean"] == rows[-1]["episode_reward_mean/runner"]
    header = (tmp_path / "metrics.csv").read_text().splitlines()[0]
    assert "eval_reward_mean/walker" in header


def test_single_team_checkpoints_from_before_teams_still_resume(tmp_path):
    """Runs started before teams existed (one learner, flat state) continue."""
    config = build_config(_config(env={"name": "corridor", "settings": {"n_agents": 3, "length": 4}}))
    trainer = Trainer(config, None, verbose=False)
    trainer._start()
    for _ in range(40):
        trainer.iteration()
    state = trainer.state_dict()
    team = state.pop("teams")["runner"]
    old_window = Window(state["window"].env_steps, [], [], 1.5)
    old_window.episode_returns = [1.0, 2.0]  # the old window kept one float per episode
    old_window.updates, old_window.loss_sum, old_window.grad_norm_sum = 3, 0.3, 0.6
    legacy = {**state, **{k: team[k] for k in ("learner", "replay", "selector", "relay", "nstep")}, "window": old_window}
    resumed = Trainer(config, None, verbose=False)
    resumed.load_state_dict(legacy)
    for p, q in zip(_params(resumed.teams[0]), _params(trainer.teams[0])):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    np.testing.assert_array_equal(resumed.teams[0].replay.size, trainer.teams[0].replay.size)
    assert resumed.teams[0].window.updates == 3
    resumed.iteration()
    assert resumed._report()["episodes"] == 2


def test_battle_trains_and_resumes_with_restarted_episodes(tmp_path):
    """MAgent2's engine cannot be copied: a resumed run restarts its in-flight episodes."""
    pytest.importorskip("magent2")
    config = {
        "preset": "battle-tiny",
        "env": {"name": "battle", "settings": {"max_cycles": 150}},
        "total_steps": 300,
        "report_interval": 100,
        "checkpoint_interval": 200,
        "eval": {"interval": 0},
        "model": {"conv_channels": [4], "hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 400, "batch_size": 4, "fragment_length": 5},
        "sharing": {"select": "quantile", "window": 50},
        "groups": {"red": {"role": "ddqn"}},
    }
    first = Trainer(build_config({**config, "total_steps": 200}), tmp_path, verbose=False)
    first.train()
    assert first.venv.get_state() is None
    assert first.history[-1]["transitions_relayed"] > 0  # blue relays within blue
    resumed = Trainer(build_config(config), tmp_path, verbose=False)
    resumed.train()
    assert resumed.counters.env_steps == 300
    assert [int(r["env_steps"]) for r in resumed.history] == [300]
    assert 0 < resumed.history[-1]["bandwidth_actual"] < 1
    with (tmp_path / "metrics.csv").open() as handle:
        assert [int(line.split(",")[0]) for line in handle.readlines()[1:]] == [100, 200, 300]
