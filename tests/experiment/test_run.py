"""The training loop: relay routing into replays, parameter sharing, training intensity."""

import numpy as np
import pytest

from relayrl.experiment import build_run, build_config


def _trainer(select="none", team=None, num_envs=1, param_sharing=False, total=400, learning_starts=1000, n_agents=3):
    config = build_config(
        {
            "preset": "t",
            "total_steps": total,
            "env": {"name": "corridor", "settings": {"n_agents": n_agents, "length": 30, "max_steps": 50}, "num_envs": num_envs},
            "model": {"hiddens": [16], "head_hidden": 16},
            "sharing": {"select": select, "team": team},
            "dqn": {"learning_starts": learning_starts, "buffer_size": 1000, "batch_size": 4, "param_sharing": param_sharing},
            "eval": {"interval": 0},
        }
    )
    return build_run(config, None, verbose=False)


def test_share_all_inserts_every_transition_into_every_other_replay():
    run = _trainer("all")
    run.start()
    run.iteration()  # 4 env steps, 3 agents, nobody leaves a 30-cell corridor in 4 steps
    np.testing.assert_array_equal(run.learners["runner"].replay.size, [4 * 3] * 3)


def test_no_sharing_keeps_replays_private():
    run = _trainer("none")
    run.start()
    run.iteration()
    np.testing.assert_array_equal(run.learners["runner"].replay.size, [4] * 3)


def test_team_filter_limits_senders_and_receivers():
    run = _trainer("all", team=[0, 2])
    run.start()
    run.iteration()
    np.testing.assert_array_equal(run.learners["runner"].replay.size, [8, 4, 8])
    assert run.learners["runner"].relay.stats.sent.tolist() == [4, 0, 4]


def test_relayed_rows_are_the_senders_transitions():
    run = _trainer("all", n_agents=2)
    run.start()
    run.iteration()
    stored = run.learners["runner"].replay.storage()
    own0 = stored["obs"][0, :4]
    received1 = stored["obs"][1, 4:8]
    np.testing.assert_array_equal(own0, received1)


def test_parameter_sharing_has_one_replay_with_every_entity():
    run = _trainer(param_sharing=True)
    run.start()
    run.iteration()
    assert run.learners["runner"].layout.n_sets == 1 and run.learners["runner"].batch_size == 3 * 4
    np.testing.assert_array_equal(run.learners["runner"].replay.size, [4 * 3])


@pytest.mark.parametrize("num_envs", [1, 2, 4, 8])
def test_training_intensity_does_not_depend_on_env_copies(num_envs):
    run = _trainer(num_envs=num_envs, total=800, learning_starts=200)
    run.train()
    # one update per agent per 4 env steps (summed over copies) once learning has started;
    # the iteration that reaches learning_starts already trains on what it collected
    per_iteration = max(4, num_envs)
    assert run.counters.env_steps == 800
    assert run.learners["runner"].updates == (800 - 200) // 4 + per_iteration // 4


def test_section_timer_profiles_the_loop_only_when_enabled():
    from relayrl.core.profiler import LOOP_SECTIONS

    config = build_config({
        "env": {"name": "pursuit", "settings": {"x_size": 8, "y_size": 8, "n_evaders": 3, "n_pursuers": 3}},
        "total_steps": 300, "report_interval": 100, "eval": {"interval": 0},
        "sharing": {"select": "quantile"}, "dqn": {"learning_starts": 100, "batch_size": 8},
    })
    run = build_run(config, None, verbose=False)
    run.config.total_steps = 150
    run.train()
    assert run.timer.seconds == {}
    run.timer.enabled = True
    run.config.total_steps = 300
    run.train()
    assert set(run.timer.seconds) == set(LOOP_SECTIONS)
    assert all(s > 0 for s in run.timer.seconds.values())


@pytest.mark.parametrize("section", [
    {"dqn": {"n_step": 5, "learning_starts": 0, "fragment_length": 1, "buffer_size": 100, "batch_size": 4}},
    {"centralised": {"algo": "maddpg", "n_step": 5, "random_steps": 2, "fragment_length": 1, "updates_per_fragment": 1, "hidden": [8], "batch_size": 4, "buffer_size": 100}},
])
def test_learning_waits_until_the_replay_holds_a_row_when_n_step_rows_complete_after_learning_starts(section):
    """An n-step row is stored n steps after it starts: a first update due before that
    waits for it, and the run learns from the first row on."""
    config = build_config({"preset": "early", "total_steps": 40, "report_interval": 40, "eval": {"interval": 0},
                           "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 30, "max_steps": 50}}, **section})
    run = build_run(config, None, verbose=False)
    rows = run.train()
    run.close()
    (learner,) = run.learners.values()
    assert learner.updates == 40 - 4  # from step 5, when the first 5-step rows are complete
    assert rows[-1]["updates"] == learner.updates
