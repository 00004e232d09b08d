"""backend ray: env runners and learner actors (a local Ray instance). One runner equals
the local backend; K runners split the copies, and a run stopped and resumed continues
exactly from the runners' saved states; learner actors equal the driver's learners (off-
policy and episode learners, population-based training across rounds, a resume inside a
round); bad backends are refused before training."""

import numpy as np
import pytest
import torch

from relayrl.arena.ray.runners import rotated, slices
from relayrl.core.errors import ConfigError
from relayrl.experiment import Run, build_run, build_config
from round_runs import cut_copy, rows, shared_replay_config

ray = pytest.importorskip("ray")
TIMING = ("sps", "updates_per_s", "wall_s")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=3, include_dashboard=False, log_to_driver=False)  # not another test's cluster
    yield
    ray.shutdown()


def _config(num_envs: int, **extra) -> dict:
    return {
        "preset": "ray-runners",
        "env": {"name": "corridor", "num_envs": num_envs, "settings": {"n_agents": 3, "length": 4, "max_steps": 12}},
        "total_steps": 800,
        "sharing": {"select": "quantile"},
        "report_interval": 200,
        "checkpoint_interval": 400,
        "keep_checkpoints": 5,
        "eval": {"interval": 400, "episodes": 2},
        "model": {"hiddens": [16], "head_hidden": 16},
        "dqn": {"learning_starts": 100, "buffer_size": 1000, "batch_size": 8},
        **extra,
    }


def _train(config: dict, run_dir) -> Run:
    run = build_run(build_config(config), run_dir, verbose=False)
    run.train()
    run.close()
    return run


def _same_networks(a: Run, b: Run) -> None:
    for p, q in zip(a.learners["runner"].algorithm.online.parameters(), b.learners["runner"].algorithm.online.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_slices_are_contiguous_and_rotated_matches_keep_each_copys_match():
    assert slices(5, 2) == [(0, 3), (3, 2)] and slices(4, 4) == [(0, 1), (1, 1), (2, 1), (3, 1)]
    matches = [{"g": "a"}, {"g": "b"}, {"g": "c"}]
    for first, copies in slices(7, 3):
        local = rotated(matches, first)
        assert [local[i % 3] for i in range(copies)] == [matches[(first + i) % 3] for i in range(copies)]


def test_one_runner_equals_the_local_backend(tmp_path):
    local = _train(_config(2), tmp_path / "local")
    remote = _train(_config(2, backend={"kind": "ray", "runners": 1}), tmp_path / "ray")
    assert rows(tmp_path / "local" / "metrics.csv", TIMING) == rows(tmp_path / "ray" / "metrics.csv", TIMING)
    _same_networks(local, remote)


def test_two_runners_step_their_slices_and_resume_exactly(tmp_path):
    config = _config(3, backend={"kind": "ray", "runners": 2})
    straight = _train(config, tmp_path / "a")
    table = rows(tmp_path / "a" / "metrics.csv", TIMING)
    assert [int(r["env_steps"]) for r in table] == [201, 402, 600, 801]  # 3 copies (2 + 1 over the runners) a step
    assert all(int(r["episodes"]) > 0 for r in table)
    cut_copy(tmp_path / "a", tmp_path / "b", 402)
    resumed = _train(config, tmp_path / "b")
    assert rows(tmp_path / "b" / "metrics.csv", TIMING) == table
    _same_networks(straight, resumed)


@pytest.mark.slow  # that runners draw their own exploration; the default run checks that K runners resume exactly
def test_two_runners_explore_apart_from_the_local_backend(tmp_path):
    _train(_config(2), tmp_path / "local")
    _train(_config(2, backend={"kind": "ray", "runners": 2}), tmp_path / "ray")
    assert rows(tmp_path / "local" / "metrics.csv", TIMING) != rows(tmp_path / "ray" / "metrics.csv", TIMING)


def _population(**extra) -> dict:
    """Three SUPER teams, one corridor copy each, population-based training over 3 rounds
    (learning rate, exploration and bandwidth perturbed: the runners must act with each
    round's exploration scales)."""
    return {
        **_config(3),
        "total_steps": None,
        "policies": {"a": {}, "b": {}, "c": {}},
        "match": [{"runner": "a"}, {"runner": "b"}, {"runner": "c"}],
        "rounds": [{"steps": 300}] * 3,
        "pbt": {"population": ["a", "b", "c"], "fraction": 0.34, "perturb": ["lr", "exploration", "bandwidth"]},
        "report_interval": 150,
        "checkpoint_interval": 150,
        "eval": {"interval": 0},
        **extra,
    }


def _build(config: dict) -> dict:
    return {k: v for k, v in config.items() if v is not None}


def test_rounds_on_one_runner_equal_the_local_backend(tmp_path):
    _train(_build(_population()), tmp_path / "local")
    _train(_build(_population(backend={"kind": "ray", "runners": 1})), tmp_path / "ray")
    for name in ("metrics.csv", "pbt.csv"):
        assert rows(tmp_path / "local" / name, TIMING) == rows(tmp_path / "ray" / name, TIMING)


def test_the_runners_of_a_round_play_the_next_rounds_venue_in_their_processes():
    run = build_run(build_config(_build(_population(backend={"kind": "ray", "runners": 2}))), None, verbose=False)
    try:
        collector = run.collector
        collector.reset(0)
        actors = list(collector.runners.actors)
        collector.open(run.venues(1))
        collector.reset(1)
        assert all(new is old for new, old in zip(collector.runners.actors, actors, strict=True)), "no new runner started"
        got = collector.collect(4, 0)
        assert sorted(got.fragments) == ["a", "b", "c"] and got.env_steps == 12
    finally:
        run.close()


def test_rounds_on_two_runners_resume_inside_a_round_exactly(tmp_path):
    config = _build(_population(backend={"kind": "ray", "runners": 2}))
    _train(config, tmp_path / "a")
    cut_copy(tmp_path / "a", tmp_path / "b", 450)  # inside round 1
    _train(config, tmp_path / "b")
    for name in ("metrics.csv", "pbt.csv"):
        assert rows(tmp_path / "a" / name, TIMING) == rows(tmp_path / "b" / name, TIMING)


def test_too_many_runners_are_refused_before_training():
    with pytest.raises(ConfigError, match="each runner steps at least one env copy; set env.num_envs=3 or more, or backend.runners=2 or fewer"):
        build_config(_config(2, backend={"kind": "ray", "runners": 3}))
    # a Gymnasium env's K copies are one env (its num_envs stays 1): one runner
    with pytest.raises(ConfigError, match="a gym env steps its K copies .* as one env, so it takes one runner: set backend.runners=1"):
        build_config({"preset": "cart-ray", "env": {"name": "CartPole-v1"}, "dqn": {}, "backend": {"kind": "ray", "runners": 2}})


def test_more_runners_than_the_cluster_has_cpus_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="runners=4 x runner_cpus=1 and 0 learner actors x learner_cpus=1 need 4 CPUs but the Ray cluster has 3"):
        build_run(build_config(_config(4, backend={"kind": "ray", "runners": 4})), tmp_path / "run", verbose=False)


TWO_TEAMS = {"policies": {"a": {}, "b": {}}, "match": [{"runner": "a"}, {"runner": "b"}]}
ACTORS = {"kind": "ray", "runners": 1, "learners": "actors", "learner_cpus": 0.5}


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_learner_actors_equal_the_drivers_learners(precision, tmp_path):
    """Also with bfloat16 products, which the actors apply as the driver does."""
    driver = _train(_config(2, **TWO_TEAMS, backend={"kind": "ray", "runners": 1}, precision=precision), tmp_path / "driver")
    actors = _train(_config(2, **TWO_TEAMS, backend=ACTORS, precision=precision), tmp_path / "actors")
    assert rows(tmp_path / "driver" / "metrics.csv", TIMING) == rows(tmp_path / "actors" / "metrics.csv", TIMING)
    for pid in ("a", "b"):  # home again after the run, with the actors' networks
        assert type(actors.learners[pid]) is type(driver.learners[pid])
        for p, q in zip(driver.learners[pid].algorithm.online.parameters(), actors.learners[pid].algorithm.online.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_an_episode_learner_in_an_actor_equals_it_in_the_driver(tmp_path):
    config = {
        "preset": "ray-qmix",
        "env": {"name": "predator-prey", "num_envs": 2, "settings": {"n_predators": 2, "n_stags": 1, "n_hares": 0, "x_size": 4, "y_size": 4, "max_cycles": 20}},
        "total_steps": 600,
        "report_interval": 200,
        "checkpoint_interval": 300,
        "eval": {"interval": 0},
        "qmix": {"max_episode_length": 20, "batch_size": 4, "buffer_size": 30, "epsilon_steps": 300, "target_update_episodes": 5},
    }
    _train({**config, "backend": {"kind": "ray", "runners": 1}}, tmp_path / "driver")
    _train({**config, "backend": ACTORS}, tmp_path / "actors")
    table = rows(tmp_path / "driver" / "metrics.csv", (*TIMING, "sample_share"))  # a timing too
    assert float(table[-1]["updates"]) > 0 and rows(tmp_path / "actors" / "metrics.csv", (*TIMING, "sample_share")) == table


def test_learner_actors_under_population_based_training_equal_the_drivers_and_resume_inside_a_round(tmp_path):
    fragments = {"fragment_steps": 4}  # fewer calls per env step: the same schedule on both sides
    _train(_build(_population(backend={"kind": "ray", "runners": 1, **fragments})), tmp_path / "driver")
    config = _build(_population(backend={**ACTORS, **fragments}))
    _train(config, tmp_path / "actors")
    cut_copy(tmp_path / "actors", tmp_path / "resumed", 450)  # inside round 1
    _train(config, tmp_path / "resumed")
    for name in ("metrics.csv", "pbt.csv"):
        table = rows(tmp_path / "driver" / name, TIMING)
        assert rows(tmp_path / "actors" / name, TIMING) == table and rows(tmp_path / "resumed" / name, TIMING) == table


def test_learner_actors_need_the_ray_backend():
    with pytest.raises(ConfigError, match="set backend.kind=ray as well"):
        build_config(_config(2, backend={"learners": "actors"}))


def test_the_relay_between_learners_is_the_same_in_the_driver_and_between_learner_actors(tmp_path):
    relay = {**TWO_TEAMS, "relay": {"between": ["a", "b"]}, "sharing": {"select": "quantile", "bandwidth": 0.2}}
    _train(_config(2, **relay), tmp_path / "local")
    _train(_config(2, **relay, backend=ACTORS), tmp_path / "actors")
    timing = (*TIMING, "relay_seconds")
    table = rows(tmp_path / "local" / "metrics.csv", timing)
    assert rows(tmp_path / "actors" / "metrics.csv", timing) == table
    sent = {pid: sum(int(r[f"relayed_out/{pid}"]) for r in table) for pid in ("a", "b")}
    assert sent["a"] > 0 and sent["b"] > 0
    assert all(int(r["relayed_out_bytes/b"]) == 17 * int(r["relayed_out/b"]) for r in table)  # a corridor row: 17 bytes
    _train(_config(2, **{**relay, "relay": None}), tmp_path / "apart")
    assert rows(tmp_path / "apart" / "metrics.csv", timing) != table  # what the other team relays changes what a team learns


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relay": {"between": ["a", "nobody"]}}, r"relay.between names \['nobody'\], which are not learning policies"),
        ({"relay": {"between": ["a", "b"]}, "sharing": {"select": "none"}}, "select no transitions to relay"),
    ],
)
def test_a_relay_between_learners_that_cannot_relay_is_refused(change, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_config(2, **{**TWO_TEAMS, **change}))


def _shared_replay(**extra) -> dict:
    return shared_replay_config(keep_checkpoints=5, eval={"interval": 300, "episodes": 1}, **extra)


def test_a_shared_replay_is_the_same_in_the_driver_and_between_learner_actors_and_resumes(tmp_path):
    fragments = {"fragment_steps": 4}
    driver = _train(_shared_replay(backend={"kind": "ray", "runners": 1, **fragments}), tmp_path / "driver")
    actors = _train(_shared_replay(backend={**ACTORS, **fragments}), tmp_path / "actors")
    timing = (*TIMING, "draw_seconds")
    table = rows(tmp_path / "driver" / "metrics.csv", timing)
    assert rows(tmp_path / "actors" / "metrics.csv", timing) == table
    assert all(0.0 < float(r["dps_weight/b"]) < 1.0 for r in table if int(r["env_steps"]) > 200)
    replay = actors.learners.exchanges[0].replay  # home after the run
    held = replay.gather(np.arange(replay.size))
    np.testing.assert_array_equal(np.bincount(held["agent"]), [600, 600])  # every agent step of both learners
    for pid in ("a", "b"):
        for p, q in zip(driver.learners[pid].algorithm.actor.parameters(), actors.learners[pid].algorithm.actor.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)
    cut_copy(tmp_path / "actors", tmp_path / "resumed", 400)
    _train(_shared_replay(backend={**ACTORS, **fragments}), tmp_path / "resumed")
    assert rows(tmp_path / "resumed" / "metrics.csv", timing) == table
    apart = _shared_replay(shared_replay=None, backend={"kind": "ray", "runners": 1, **fragments})
    _train(apart, tmp_path / "apart")  # each learner alone in a replay of its own
    assert rows(tmp_path / "apart" / "metrics.csv", (*timing, *(f"dps_weight/{p}" for p in "ab"))) != rows(
        tmp_path / "driver" / "metrics.csv", (*timing, *(f"dps_weight/{p}" for p in "ab"))
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shared_replay": {"between": ["a", "nobody"]}}, r"names \['nobody'\], which are not learning policies"),
        ({"sharing": {"select": "quantile"}}, r"has \['a', 'b'\], which keep replays of their own"),
        ({"policies": {"a": {}, "b": {"actor_critic": {"buffer_size": 500}}}}, "buffer_size differ"),
        ({"total_steps": None, "rounds": [{"steps": 300}, {"steps": 300}]}, "runs without rounds"),
    ],
)
def test_a_shared_replay_that_cannot_be_shared_is_refused(change, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_shared_replay(**change))


def test_a_plugins_env_selection_rule_and_algorithm_reach_the_runners_and_the_learner_actors(tmp_path, unload_plugins):
    """``testenvs.plugin`` registers the env (its own section class), the selection rule and
    the algorithm in the driver; the actors import it too (with the driver's import path,
    where pytest put ``tests``): the same metrics as the local backend."""
    plugin = {
        "plugins": ["testenvs.plugin"], "env": {"name": "hall", "num_envs": 2, "settings": {"size": 3}}, "sharing": {"select": "quantile-plugin"},
        "dqn": {"algo": "dqn-plugin", "learning_starts": 100, "buffer_size": 1000, "batch_size": 8},
    }
    local = _train(_config(2, **TWO_TEAMS, **plugin), tmp_path / "local")
    actors = _train(_config(2, **TWO_TEAMS, **plugin, backend=ACTORS), tmp_path / "actors")
    assert rows(tmp_path / "local" / "metrics.csv", TIMING) == rows(tmp_path / "actors" / "metrics.csv", TIMING)
    for pid in ("a", "b"):
        for p, q in zip(local.learners[pid].algorithm.online.parameters(), actors.learners[pid].algorithm.online.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)


@pytest.mark.parametrize("backend", [{"kind": "ray", "runners": 1}, ACTORS])
def test_an_entry_a_modules_function_registered_is_named_when_the_actors_lack_it(unload_plugins, backend):
    from testenvs import late_plugin

    late_plugin.register()
    config = build_config(_config(2, sharing={"select": "late-rule"}, backend=backend))
    run = build_run(config, None, verbose=False)
    with pytest.raises(ConfigError, match=r"importing testenvs.late_plugin in a Ray actor did not register selection mode 'late-rule' \(testenvs.late_plugin\): "
                                          r"register entries when their module is imported"):
        run.train()
    run.close()
