"""Rounds: env settings and matches per round, hooks by import path with each round's
results, episodes ended at the boundaries, a checkpoint at every boundary and an exact
resume inside a round (small Predator-Prey, recurrent QMIX: the learner whose episode
storage a boundary must not corrupt)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from relayrl.arena.round import end_episodes
from relayrl.arena.schemes.curriculum import curriculum
from relayrl.core.errors import ConfigError, HookError, RelayRLWarning
from relayrl.experiment.checkpoint import list_checkpoints
from relayrl.experiment import build_run, build_config
from round_runs import cut_copy, hook_module, rows, train

SMALL_GAME = {"n_predators": 4, "n_stags": 2, "x_size": 5, "y_size": 5, "max_cycles": 40}
HOOKS = '''
import json, os

def record(context):
    results = context.results
    entry = {"when": "end" if results else "start", "round": context.index, "env_steps": context.env_steps}
    if results:
        entry.update(start=results.start, end=results.end, episodes=len(results.returns), cut=results.cut, mean=results.mean_return("predator"))
    with open(os.environ["RELAYRL_TEST_HOOKS"], "a") as handle:
        handle.write(json.dumps(entry) + "\\n")


def fails_in_round_2(context):
    if context.index == 1:
        raise RuntimeError("the curriculum table has no row 2")


def no_arguments():
    pass
'''


@pytest.fixture
def hooks(tmp_path, monkeypatch) -> Path:
    """An importable hook module that appends what it sees to a file."""
    return hook_module(tmp_path, monkeypatch, "round_hooks", HOOKS)


def _config(rounds: list[dict], **extra) -> dict:
    return {
        "preset": "tiny-rounds",
        "env": {"name": "predator-prey", "num_envs": 2, "settings": SMALL_GAME},
        "rounds": rounds,
        "report_interval": 200,
        "checkpoint_interval": 200,
        "keep_checkpoints": 20,
        "eval": {"interval": 0},
        "qmix": {"max_episode_length": 40, "batch_size": 4, "buffer_size": 50, "epsilon_steps": 1000, "target_update_episodes": 5},
        **extra,
    }


ROUNDS = curriculum(400, {"miscapture": [0.0, -1.5, -0.5], "n_stags": [2, 1, 2]})


def _rows(run_dir: Path) -> list[dict]:
    return rows(run_dir / "metrics.csv", drop=("sps", "updates_per_s", "wall_s", "sample_share"))


def test_each_round_trains_on_its_env_and_hooks_see_its_results(tmp_path, hooks):
    config = _config(ROUNDS, hooks={"on_round_start": ["round_hooks:record"], "on_round_end": ["round_hooks:record"]})
    run = train(config, tmp_path / "run")
    assert run.counters.env_steps == 1200 == build_config(config).total_steps
    assert run.venue.venv.settings["miscapture"] == -0.5 and run.venue.venv.settings["n_stags"] == 2  # the last round's env
    seen = [json.loads(line) for line in hooks.read_text().splitlines()]
    assert [(e["when"], e["round"]) for e in seen] == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    ends = [e for e in seen if e["when"] == "end"]
    assert [(e["start"], e["end"]) for e in ends] == [(0, 400), (400, 800), (800, 1200)]
    assert all(e["episodes"] > 0 for e in ends)
    rows = _rows(tmp_path / "run")
    assert [int(r["round"]) for r in rows] == [0, 0, 1, 1, 2, 2]
    saved = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir() if p.is_dir())
    assert saved == [f"step_{s:010d}" for s in (200, 400, 600, 800, 1000, 1200)]
    (learner,) = run.learners.values()
    assert learner.episodes >= 3 * 400 // (2 * 40)  # every episode ends by the limit or a boundary


def test_a_run_stopped_inside_a_round_resumes_exactly(tmp_path, hooks):
    config = _config(ROUNDS, hooks={"on_round_end": ["round_hooks:record"]})
    straight = train(config, tmp_path / "a")
    cut_copy(tmp_path / "a", tmp_path / "b", 600)  # inside round 1
    resumed = train(config, tmp_path / "b")
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    (a,), (b,) = straight.learners.values(), resumed.learners.values()
    for p, q in zip(a.algorithm.learned.parameters(), b.algorithm.learned.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    seen = [json.loads(line) for line in hooks.read_text().splitlines()]
    assert [e["round"] for e in seen] == [0, 1, 2, 1, 2]  # a, then b's resume: rounds 1 and 2 end once more
    assert seen[-2] == seen[1] and seen[-1] == seen[2]  # with the same results as the uninterrupted run


def test_rounds_added_at_a_resume_train_on_as_if_the_run_had_had_them_from_the_start(tmp_path, hooks):
    extra = {"hooks": {"on_round_end": ["round_hooks:record"]}}
    train(_config(ROUNDS, **extra), tmp_path / "a")
    shorter = train(_config(ROUNDS[:2], **extra), tmp_path / "b")
    assert shorter.counters.env_steps == 800
    resumed = train(_config(ROUNDS, **extra), tmp_path / "b")  # the same run directory, one round more
    assert resumed.counters.env_steps == 1200 and resumed.venue.venv.settings["miscapture"] == -0.5
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    seen = [json.loads(line) for line in hooks.read_text().splitlines()]
    assert [e["round"] for e in seen] == [0, 1, 2, 0, 1, 2]  # b's rounds 0 and 1 end once; round 2 after the resume
    assert seen[3:] == seen[:3]
    changed = [entry["changed"] for entry in yaml.safe_load((tmp_path / "b" / "provenance.yaml").read_text()) if "changed" in entry]
    assert [sorted(c) for c in changed] == [["rounds", "total_steps"]]


def test_a_resume_may_add_rounds_but_not_change_the_runs_own(tmp_path):
    train(_config(ROUNDS[:2]), tmp_path / "run")
    with pytest.raises(ConfigError, match="add rounds after the run's"):
        build_run(build_config(_config([ROUNDS[0], ROUNDS[2], ROUNDS[1]])), tmp_path / "run")


def test_a_round_shorter_than_an_episode_counts_its_episodes_in_flight(tmp_path, hooks, capsys):
    config = _config([{"steps": 30}, {"steps": 30}], hooks={"on_round_end": ["round_hooks:record"]}, report_interval=30, checkpoint_interval=30)
    run = build_run(build_config(config), tmp_path / "run")
    run.train()
    run.close()
    ends = [json.loads(line) for line in hooks.read_text().splitlines()]
    assert [(e["episodes"], e["cut"]) for e in ends] == [(2, 2), (2, 2)]  # each copy's episode, cut after 15 of its 40 steps
    assert all(np.isfinite(e["mean"]) for e in ends)
    assert re.search(r"round 1/2 ended at env step \d+: 2 episodes \(2 of them cut by the round's end: their returns so far\)", capsys.readouterr().out)


def test_a_curriculum_is_a_list_per_setting_or_a_function_of_the_round():
    assert curriculum(100, {"miscapture": [0.0, -1.0]}) == [{"steps": 100, "env": {"miscapture": 0.0}}, {"steps": 100, "env": {"miscapture": -1.0}}]
    assert curriculum([10, 20], lambda i: {"n_stags": i + 1}) == [{"steps": 10, "env": {"n_stags": 1}}, {"steps": 20, "env": {"n_stags": 2}}]
    with pytest.raises(ValueError, match="one value per round"):
        curriculum([10, 20, 30], {"miscapture": [0.0, -1.0]})


def test_the_last_step_of_a_round_ends_every_episode_in_flight():
    t, w, n = 3, 3, 2
    fragment = {
        "valid": np.ones((t, w, n), bool),
        "terminated": np.zeros((t, w, n), bool),
        "truncated": np.zeros((t, w, n), bool),
        "over": np.zeros((t, w), bool),
    }
    fragment["valid"][-1, 1, 1] = False  # entity 1 of copy 1 left its episode earlier
    fragment["terminated"][-1, 2] = True  # copy 2's episode ended by itself
    fragment["over"][-1, 2] = True
    end_episodes(fragment)
    assert fragment["over"][-1].all() and not fragment["over"][:-1].any()
    np.testing.assert_array_equal(fragment["truncated"][-1], [[True, True], [True, False], [False, False]])
    assert not fragment["truncated"][:-1].any()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rounds": [{"steps": 400, "env": {"miscapture": 1.0}}]}, "rounds[0].env"),
        ({"rounds": [{"steps": 400, "env": {"n_stag": 1}}]}, "rounds[0].env.n_stag: Extra inputs are not permitted (got 1) -- unknown key; allowed here: "),
        ({"rounds": [{"steps": 400}], "total_steps": 500}, "add up to 400"),
        ({"rounds": [{"steps": 400}], "hooks": {"on_round_end": ["relayrl.no_such_module:f"]}}, "cannot be loaded"),
        ({"rounds": [{"steps": 400, "match": [{"predator": "other"}]}]}, "does not declare"),
    ],
)
def test_bad_rounds_are_refused_before_training(change, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_config({**_config([]), **change})


def test_a_round_that_changes_a_policys_shapes_is_refused_before_training():
    config = build_config(_config([{"steps": 400}, {"steps": 400, "env": {"n_predators": 3}}]))
    with pytest.raises(ConfigError, match="keep their shapes"):
        build_run(config, None, verbose=False)


def test_the_curriculum_example_is_a_valid_config():
    import yaml

    path = Path(__file__).resolve().parents[2] / "examples" / "predator_prey_curriculum.yaml"
    config = build_config(yaml.safe_load(path.read_text()))
    assert config.total_steps == 40_000
    assert [config.round_env(i).settings.miscapture for i in range(4)] == [0.0, -0.5, -1.0, -1.5]


@pytest.mark.parametrize("hook, message", [
    ("round_hooks:fails_in_round_2", r"hook round_hooks:fails_in_round_2 \(on_round_end\) of round 2/3 raised RuntimeError: the curriculum table has no row 2"),
    ("round_hooks:no_arguments", r"hook round_hooks:no_arguments \(on_round_end\) of round 1/3 raised TypeError: .*takes 0 positional arguments"),
])
def test_a_hook_that_fails_stops_the_run_naming_it_and_keeps_what_was_written(tmp_path, hooks, hook, message):
    """One message: the hook, the round, what it raised, what the run keeps and how to resume."""
    with pytest.raises(HookError, match=message + r".*The run stopped there; the last checkpoint step_\d+ and the metrics so far are kept\. Fix the hook, then resume: relayrl resume "):
        train(_config(ROUNDS, hooks={"on_round_end": [hook]}), tmp_path)
    assert list_checkpoints(tmp_path / "checkpoints") and (tmp_path / "metrics.csv").read_text().count("\n") >= 2


def test_rounds_that_whole_fragments_would_drop_or_stretch_are_refused_or_said():
    """PPO's fragment here is its rollout, 20 steps of 3 copies = 60 env steps, and a round
    ends with the first fragment that reaches its end: a round of 30 pushed the last round
    past the budget (it never ran, without a word), so it is refused; rounds of 130, 130 and
    100 run 180, 120 and 60 env steps, which the run says."""
    def config(rounds: list[int]) -> dict:
        return build_config({"env": {"name": "corridor", "num_envs": 3, "settings": {"n_agents": 2, "length": 4, "max_steps": 10}},
                             "on_policy": {"algo": "ppo", "rollout_length": 20, "hidden": [8]}, "rounds": [{"steps": s} for s in rounds],
                             "eval": {"interval": 0}})

    with pytest.raises(ConfigError, match=r"rounds\[1\]\.steps=30 is shorter than one fragment of this run \(60 env steps\)"):
        build_run(config([60, 30, 60]), None, verbose=False)
    with pytest.warns(RelayRLWarning, match=r"the rounds' steps \[130, 130, 100\] are not whole fragments of this run \(60 env steps\).*they will run \[180, 120, 60\] env steps"):
        build_run(config([130, 130, 100]), None, verbose=False).close()
