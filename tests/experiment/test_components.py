"""The run's own components, each on its own: the clock's triggers, the reporter's rows
from learners' reports, the run directory's checks and records, the evaluator's greedy
episodes against a random group, and the round schedule's end of a round."""

import csv
import math

import numpy as np
import pytest
import yaml

from relayrl.arena.policy import RandomPolicy
from relayrl.arena.round import HooksConfig, RoundConfig, RoundSchedule
from relayrl.core.errors import CheckpointError, ConfigError
from relayrl.envs.episodes import EpisodeStats
from relayrl.experiment import build_config
from relayrl.experiment.clock import Clock
from relayrl.experiment.evaluation import Evaluator
from relayrl.experiment.metrics import COLUMNS, MetricsWriter
from relayrl.experiment.report import ReportLayout, Reporter
from relayrl.experiment.run_dir import RunDirectory
from relayrl.sharing.relay import RelayStats
from components import venue


def test_the_clock_fires_each_trigger_every_interval_and_rounds_at_their_ends():
    intervals = {"report": 100, "eval": 0, "checkpoint": 250}
    clock = Clock(Clock.start(intervals), intervals, [300, 500])
    fired = []
    for step in range(40, 601, 40):
        clock.counters.env_steps = step
        for name in ("report", "checkpoint", "eval"):
            if clock.due(name):
                fired.append((name, step))
                clock.fire(name)
        if clock.due("round"):
            fired.append(("round", step))
            clock.counters.round = min(clock.counters.round + 1, 1)
    assert [s for n, s in fired if n == "report"] == [120, 200, 320, 400, 520, 600]
    assert [s for n, s in fired if n == "checkpoint"] == [280, 520]
    assert not [s for n, s in fired if n == "eval"], "an interval of 0 never fires"
    assert [s for n, s in fired if n == "round"][:2] == [320, 520]


def _report(updates: int, loss: float, sent: list[int] | None = None) -> dict:
    relay = RelayStats(np.array([10, 10]), np.array(sent)) if sent else None
    return {"updates": updates, "new_updates": 4, "td_loss": loss, "grad_norm": 1.0, "epsilon": 0.5, "relay_s": 0.0, "draw_s": 0.0,
            "q_mean": 2.0, "relay": relay}


def test_a_reporter_row_takes_the_main_learners_metrics_and_every_learners_loss_and_reward():
    layout = ReportLayout(["red", "blue"], 1, ["r", "b"], "b", ("q_mean",), ("relay_seconds",), False, False)
    reporter = Reporter(layout, "[test]", 1000, 0, verbose=False)
    episodes = EpisodeStats()
    episodes.returns, episodes.lengths, episodes.copies = [np.array([1.0, 3.0]), np.array([2.0, 5.0])], [10, 20], [0, 1]
    reporter.record(episodes, 200, [{"red": "r", "blue": "b"}])
    reporter.tick(2.0)
    counters = Clock.start({"report": 1, "eval": 0, "checkpoint": 1})
    counters.env_steps, counters.agent_steps = 200, 400
    row = reporter.row(counters, {"r": _report(3, 0.1, [1, 3]), "b": _report(7, 0.2)}, {"relay_seconds": 0.25}, np.array([[0.0, 6.0]]), 0)
    assert row["updates"] == 7 and row["td_loss"] == 0.2 and row["td_loss/r"] == 0.1 and row["epsilon"] == 0.5
    assert row["episode_reward_mean"] == 4.0 and row["episode_reward_mean/red"] == 1.5 and row["episode_len_mean"] == 15
    assert row["bandwidth_actual"] == pytest.approx(0.2) and row["transitions_relayed"] == 4 and row["relay_seconds"] == 0.25
    assert row["sps"] == 100 and row["updates_per_s"] == 2 and row["eval_reward_mean"] == 6.0 and row["eval_reward_mean/red"] == 0.0
    assert row["policy_reward_mean/r"] == 1.5 and row["policy_reward_mean/b"] == 4.0  # the returns of the group each drove
    assert layout.columns() == ("episode_reward_mean/red", "episode_reward_mean/blue", "eval_reward_mean/red", "eval_reward_mean/blue",
                                "td_loss/r", "td_loss/b", "policy_reward_mean/r", "policy_reward_mean/b", "relay_seconds")
    assert math.isnan(reporter.row(counters, {"r": _report(3, 0.1), "b": _report(7, 0.2)}, {}, None, 0)["episode_reward_mean"])


def test_a_resumed_run_rewrites_metrics_begun_with_other_columns(tmp_path):
    old = "env_steps,episode_reward_mean\n100,1.5\n200,2.5\n300,3.5\n"
    (tmp_path / "metrics.csv").write_text(old)
    writer = MetricsWriter(tmp_path, resume_at=200, rows=2, extra_columns=("policy_reward_mean/p0",))
    writer.write({"env_steps": 300, "policy_reward_mean/p0": 4.0})
    writer.close()
    with (tmp_path / "metrics.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == [*COLUMNS, "policy_reward_mean/p0"]
    assert [r["env_steps"] for r in rows] == ["100", "200", "300"] and [r["episode_reward_mean"] for r in rows[:2]] == ["1.5", "2.5"]
    assert [r["policy_reward_mean/p0"] for r in rows] == ["", "", "4.0"]


def _config(tmp_path, **extra):
    return build_config({"preset": "dir", "env": {"name": "corridor"}, "total_steps": 100, **extra})


def test_a_run_directory_refuses_incomplete_checkpoints_and_other_settings_and_records_each_start(tmp_path):
    config = _config(tmp_path)
    directory = RunDirectory(tmp_path / "run", config)
    directory.open()
    directory.record_start(0, {"red": "/somewhere/step_1"})
    directory.save(50, {"config": config.model_dump(mode="json")}, {})
    directory.release()
    assert directory.saved_at(50) and yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["preset"] == "dir"
    entry = yaml.safe_load((tmp_path / "run" / "provenance.yaml").read_text())[0]
    assert entry["resumed_at"] == 0 and entry["policies_from"] == {"red": "/somewhere/step_1"}
    assert RunDirectory(tmp_path / "run", _config(tmp_path, total_steps=200)).changes == {"total_steps": (100, 200)}
    with pytest.raises(ConfigError, match="trained with other settings"):
        RunDirectory(tmp_path / "run", _config(tmp_path, dqn={"lr": 0.5}))
    (tmp_path / "broken" / "checkpoints" / "step_0000000010").mkdir(parents=True)
    with pytest.raises(CheckpointError, match="none is complete"):
        RunDirectory(tmp_path / "broken", config)


def test_the_evaluator_plays_greedy_episodes_and_the_same_group_at_random():
    where = venue(copies=2)
    (spec,) = where.venv.groups
    evaluator = Evaluator({"runner": RandomPolicy(spec, 0)}, {}, [], seed=5)
    evaluator.open(where)
    assert evaluator.greedy(4).shape == (4, 1)
    trained, baseline = evaluator.against_random(3, 0)
    assert trained.shape == baseline.shape == (3,)


def test_a_round_ends_its_episodes_in_flight_and_gives_its_results_to_the_hooks(tmp_path):
    seen = []
    tables = {}
    schedule = RoundSchedule([RoundConfig(steps=100), RoundConfig(steps=50)], HooksConfig(), [], lambda name, rows: tables.update({name: rows}), False)
    schedule.hooks["on_round_end"].append(("tests:seen", seen.append))
    fragment = {name: np.zeros((3, 2, 1), bool) for name in ("valid", "terminated", "truncated")}
    fragment["valid"][:] = True
    fragment["over"] = np.zeros((3, 2), bool)
    episodes = EpisodeStats()
    episodes.returns, episodes.copies = [np.array([2.0])], [1]
    in_flight = EpisodeStats()
    in_flight.returns, in_flight.copies = [np.array([-1.0])], [0]
    cuts = []
    schedule.record(0, 90, {"p": fragment}, episodes, lambda: cuts.append(90) or in_flight)
    assert not fragment["over"].any() and not cuts, "the round goes on"
    schedule.record(0, 100, {"p": fragment}, episodes, lambda: cuts.append(100) or in_flight)
    assert fragment["over"][-1].all() and fragment["truncated"][-1].all(), "its last step ends every episode in flight"
    assert cuts == [100], "the env copies' episodes in flight are cut once, at the round's end"
    schedule.end(0, 100, {}, ["g"], [{"g": "p"}])
    (context,) = seen
    assert context.results.start == 0 and context.results.end == 100 and context.results.cut == 1
    assert context.results.returns[:, 0].tolist() == [2.0, 2.0, -1.0] and context.results.copies.tolist() == [1, 1, 0]
    assert schedule.state_dict()["round_returns"] == [], "the next round starts with no episodes"
