"""What a run says about itself: when its learners will first update, a warning where a run
ends before a learner updated (a budget below qmix.batch_size episodes), its progress line,
and the table of a short run."""

import os

import pytest
import torch

from relayrl.arena.schemes import SCHEMES
from relayrl.cli import main
from relayrl.core.errors import ConfigError, RelayRLWarning
from relayrl.experiment import build_config, build_run, load_preset


def test_a_run_says_when_learning_starts_and_warns_when_it_never_did(capsys):
    config = load_preset("predator-prey-small-qmix").model_copy(update={"total_steps": 600, "report_interval": 300})
    config = build_config({**config.model_dump(mode="json"), "eval": {"interval": 0}})
    run = build_run(config, None, verbose=True)
    rows = run.train()
    run.close()
    out, err = capsys.readouterr()
    assert "first updates: predator once its replay holds 32 episodes (qmix.batch_size)" in out
    assert rows[-1]["updates"] == 0
    assert "warning: policy 'predator' has made no update: it learns once its replay holds 32 episodes (qmix.batch_size); the run ended at env step 600" in err


def test_the_progress_line_and_a_short_runs_table_read_as_a_user_expects(tmp_path, capsys):
    """Before any episode ended the reward is '-', not nan; a last fragment past the budget
    shows 100%; ``relayrl table`` of a run shorter than the paper's 8,000-step bin bins by
    the run's report interval (the paper's bin averaged the whole run into one cell)."""
    corridor = {"name": "corridor", "settings": {"n_agents": 3, "length": 30, "max_steps": 40}}  # no episode ends before step 29
    config = build_config({"preset": "messages", "env": corridor, "total_steps": 410, "report_interval": 25,
                           "checkpoint_interval": 410, "eval": {"interval": 0}, "dqn": {"learning_starts": 50, "buffer_size": 500, "batch_size": 8}})
    run = build_run(config, tmp_path / "run", verbose=True)
    rows = run.train()
    run.close()
    lines = [line for line in capsys.readouterr().out.splitlines() if "sps" in line]
    assert "reward - (no episode ended yet)" in lines[0] and "reward nan" not in "\n".join(lines)
    assert "/410 (100.0%)" in lines[-1] and lines[-1].endswith("eta 0.0 min")
    assert main(["table", str(tmp_path / "run"), "--at", "300"]) == 0
    cell = capsys.readouterr().out.splitlines()[-1].split("|")[3]  # the training reward at step 300
    (in_bin,) = [r["episode_reward_mean"] for r in rows if 300 <= r["env_steps"] < 325]
    assert cell.strip() == f"{in_bin:.2f}, n=1"
    assert main(["table", str(tmp_path / "run"), "--at", "10"]) == 0  # the first report came at step 28
    assert capsys.readouterr().out.splitlines()[-1].split("|")[3].strip() == "not reached"


def test_a_run_built_by_python_factories_names_the_python_call_that_continues_it(tmp_path, capsys):
    """The command line rebuilds a run from its config alone; a run whose env (or network)
    a user's function built is refused there, and its stop messages name the Python call."""
    from relayrl.envs import EnvFactory
    from relayrl.envs.corridor import CorridorEnv
    from relayrl.experiment import train

    corridor = {"name": "corridor", "settings": {"n_agents": 2, "length": 6, "max_steps": 10}}
    config = build_config({"preset": "factory-run", "env": corridor, "total_steps": 200, "report_interval": 100, "checkpoint_interval": 100,
                           "eval": {"interval": 0}, "dqn": {"learning_starts": 50, "buffer_size": 500, "batch_size": 8}})
    run = train(config, out=tmp_path, env_factory=EnvFactory(CorridorEnv, {"n_agents": 2, "length": 6, "max_steps": 10}), verbose=False)
    run_dir = run.run_dir.path
    assert run.run_dir.resume_hint() == f"train(<its config>, out={str(tmp_path)!r}, env_factory=...) in Python"
    capsys.readouterr()
    for command in (["resume", str(run_dir), "total_steps=300"], ["eval", str(run_dir), "--episodes", "1"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"was built by Python code with env_factory, which the command line cannot rebuild: continue it with train(<its config>, out={str(tmp_path)!r}, env_factory=...)" in err
    by_name = train(config.model_copy(update={"preset": "by-name"}), out=tmp_path, verbose=False)
    assert by_name.run_dir.resume_hint() == f"relayrl resume {by_name.run_dir.path}"


def test_env_name_user_stands_for_the_env_factory_and_its_actions_are_checked_once_built():
    """``env.name: user``: the config makes no claim on the env's actions, so a Box-action
    learner trains on a user's Box-action env; a learner that cannot act on them is refused
    once the env is built, and ``user`` without an env_factory is refused by name."""
    import functools

    import pytest

    from relayrl.core.errors import ConfigError
    from relayrl.envs import EnvFactory
    from relayrl.envs.corridor import CorridorEnv
    from relayrl.envs.registry import parallel_env
    from relayrl.experiment import train

    spread = EnvFactory(functools.partial(parallel_env, "mpe2.simple_spread_v3"), {"continuous_actions": True, "max_cycles": 10})
    td3 = {"preset": "user-td3", "env": {"name": "user"}, "total_steps": 60, "report_interval": 60, "eval": {"interval": 0},
           "actor_critic": {"algo": "td3", "random_steps": 20, "batch_size": 8, "buffer_size": 100, "hidden": [16]}}
    run = train(build_config(td3), out=None, env_factory=spread, verbose=False)
    assert run.reporter.history[-1]["env_steps"] == 60 and run.reporter.history[-1]["updates"] > 0
    with pytest.raises(ConfigError, match=r"group 'runner' has 2 discrete actions; the actor_critic learners need continuous \(Box\) ones \(a2c, dqn.* act on discrete actions"):
        train(build_config(td3), out=None, env_factory=EnvFactory(CorridorEnv, {"n_agents": 2}), verbose=False)
    with pytest.raises(ConfigError, match=r"env.name=user is the env that train\(config, env_factory=...\) is given in Python"):
        build_run(build_config(td3), None, verbose=False)


def test_a_critic_over_its_groups_agents_says_it_reads_no_other_group(capsys):
    """MADDPG on speaker-listener: the speaker and the listener are two groups (other spaces),
    so each critic reads its own agent only; the run says so before training."""
    pytest.importorskip("mpe2")
    config = build_config({"preset": "speaker-listener", "env": {"name": "mpe2.simple_speaker_listener_v4", "settings": {"max_cycles": 25}},
                           "centralised": {"algo": "maddpg", "batch_size": 8, "hidden": [16], "random_steps": 10, "buffer_size": 100, "fragment_length": 10, "updates_per_fragment": 1},
                           "total_steps": 30, "report_interval": 30, "eval": {"interval": 0}})
    build_run(config, None, verbose=True).close()
    out = capsys.readouterr().out
    assert ("note: the critics of policy 'speaker' (maddpg) read the observations and actions of its 1 agent(s) ['speaker_0'], "
            "not those of the env's other groups ['listener']") in out


def test_more_torch_threads_than_cores_are_warned_of():
    threads = (os.cpu_count() or 1) + 1
    config = build_config({"preset": "threads", "env": {"name": "corridor"}, "total_steps": 100, "eval": {"interval": 0}, "torch_threads": threads})
    with pytest.warns(RelayRLWarning, match=rf"torch_threads={threads} is more than this machine's {threads - 1} cores"):
        build_run(config, None, verbose=False).close()
    torch.set_num_threads(1)  # the other tests' processes keep their one thread


def test_train_from_python_on_a_complete_run_says_nothing_more_is_trained(tmp_path, capsys):
    from relayrl.experiment import train

    config = build_config({"preset": "complete", "env": {"name": "corridor"}, "total_steps": 100, "eval": {"interval": 0}, "checkpoint_interval": 100})
    first = train(config, tmp_path)
    capsys.readouterr()
    again = train(config, tmp_path)
    assert "is already complete: its checkpoint is at 100 env steps, total_steps=100; nothing more is trained" in capsys.readouterr().out
    assert again.counters.env_steps == first.counters.env_steps == 100


def test_a_scheme_registered_without_a_config_section_is_named():
    """A scheme joins through SCHEMES under the name of its RunConfig section; one without
    that section made every run fail with an AttributeError of RunConfig."""
    SCHEMES.add("keepbest", object)
    try:
        with pytest.raises(ConfigError, match=r"scheme\(s\) \['keepbest'\] are registered in SCHEMES without a section of their name"):
            build_run(build_config({"env": {"name": "corridor"}, "total_steps": 100, "eval": {"interval": 0}}), None, verbose=False)
    finally:
        SCHEMES.remove("keepbest")
