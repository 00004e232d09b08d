"""A run from policies by id, a match list and a step budget: the same run in Python, as a
YAML file and on the command line (paper 004, figure 5)."""

import csv

import yaml

from relayrl.cli import main
from relayrl.experiment import train_policies

ENV = {"name": "corridor", "settings": {"n_agents": 3, "n_walkers": 2, "length": 4, "max_steps": 12}}
POLICIES = {"runners": {"sharing": {"select": "quantile"}}, "walkers": {}, "odd": {"kind": "random"}}
MATCH = [{"runner": ["runners", "runners", "odd"], "walker": "walkers"}, {"runner": ["odd", "runners", "runners"], "walker": "walkers"}]
SETTINGS = {
    "report_interval": 200,
    "checkpoint_interval": 400,
    "eval": {"interval": 400, "episodes": 2},
    "model": {"hiddens": [16], "head_hidden": 16},
    "dqn": {"learning_starts": 100, "buffer_size": 1000, "batch_size": 8},
}


def _rows(path):
    wall = {"sps", "updates_per_s", "wall_s"}
    return [{k: v for k, v in row.items() if k not in wall} for row in csv.DictReader(path.open())]


def test_python_yaml_and_cli_make_the_same_run(tmp_path):
    run = train_policies(POLICIES, MATCH, 400, env=ENV, scale=2, out=tmp_path / "py", verbose=False, preset="arena", **SETTINGS)
    assert run.venue.venv.num_envs == 4 and list(run.learners) == ["runners", "walkers"]
    assert run.learners["runners"].relay is not None and run.learners["walkers"].relay is None
    (py_run,) = (tmp_path / "py").glob("arena-*/0")
    path = tmp_path / "arena.yaml"
    path.write_text(yaml.safe_dump({"env": ENV, "policies": POLICIES, "match": MATCH, "scale": 2, "total_steps": 400, **SETTINGS}))
    assert main(["train", str(path), "--out", str(tmp_path / "yaml")]) == 0
    (yaml_run,) = (tmp_path / "yaml").glob("arena-*/0")
    assert py_run.parent.name == yaml_run.parent.name  # one config, one hash
    rows = _rows(py_run / "metrics.csv")
    assert rows == _rows(yaml_run / "metrics.csv") and len(rows) == 2
    assert {"td_loss/runners", "td_loss/walkers", "episode_reward_mean/walker"} <= set(rows[0])
    assert main(["eval", str(py_run), "--episodes", "2"]) == 0  # the saved policies by id, against random runners
