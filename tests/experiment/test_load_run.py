"""A trained run from Python: ``load_run`` gives its policies with the networks of a
checkpoint, to evaluate or to act with in a loop of one's own; observations of the wrong
shape are refused naming the shape a policy acts on."""

import numpy as np
import pytest

from relayrl.core.errors import RelayRLError
from relayrl.experiment import build_config, build_run, load_policies, load_run, train
from relayrl.experiment.run_lock import RunLock, is_locked

CONFIG = {
    "preset": "corridor-load",
    "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}},
    "total_steps": 600,
    "report_interval": 300,
    "checkpoint_interval": 300,
    "eval": {"interval": 600, "episodes": 4},
    "model": {"hiddens": [16], "head_hidden": 16},
    "dqn": {"learning_starts": 100, "buffer_size": 600, "batch_size": 8, "lr": 1e-3},
}


def _networks(run) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in run.policies["runner"].learner.algorithm.online.parameters()]


def test_load_run_acts_with_the_trained_networks_and_build_run_alone_with_fresh_ones(tmp_path):
    trained = train(build_config(CONFIG), out=tmp_path, verbose=False)
    (run_dir,) = tmp_path.glob("*/0")
    loaded, fresh = load_run(run_dir), build_run(build_config(CONFIG), None, verbose=False)
    try:
        for a, b in zip(_networks(trained), _networks(loaded)):
            np.testing.assert_array_equal(a, b)
        assert any(not np.array_equal(a, b) for a, b in zip(_networks(trained), _networks(fresh)))
        np.testing.assert_array_equal(loaded.evaluator.greedy(4), load_run(run_dir).evaluator.greedy(4))
        first = load_run(run_dir, run_dir / "checkpoints" / "step_0000000300")
        assert any(not np.array_equal(a, b) for a, b in zip(_networks(first), _networks(loaded)))
        policy = loaded.policies["runner"]
        obs = np.zeros((3, 2, *policy.spec.obs_shape), policy.spec.obs_dtype)
        actions, _ = policy.act(obs, None, None)  # greedy, for 3 copies of both runners
        assert actions.shape == (3, 2)
        with pytest.raises(ValueError, match=r"policy 'runner' acts on observations \[W, 2, 4\] \(W env copies, a row for each of its entities "
                                             r"\['runner_0', 'runner_1'\]\), got shape \(3, 1, 4\): give every entity its row, zeros for one that left"):
            policy.act(obs[:, :1], None, None)
    finally:
        for run in (loaded, fresh):
            run.close()


def test_a_script_may_give_its_config_as_a_dict_and_directories_as_strings_and_a_copied_config_is_validated(tmp_path):
    run = build_run({**CONFIG, "total_steps": 300}, str(tmp_path / "run"), verbose=False)
    run.train()
    run.close()
    assert train({**CONFIG, "total_steps": 300}, out=None, verbose=False).counters.env_steps == 300
    with pytest.raises(RelayRLError, match=r"a config is a RunConfig or a dict of its keys .*not a str: a preset by name is load_preset\(name\)"):
        train("corridor-load", out=None, verbose=False)
    with pytest.raises(RelayRLError, match=r"the config's dqn is not what validation makes of it \(model_copy\(update=...\) does not validate"):
        build_run(build_config(CONFIG).model_copy(update={"dqn": {"lr": 1e-3}}), None, verbose=False)
    saved = load_policies(str(tmp_path / "run" / "checkpoints" / "step_0000000300"))
    with pytest.raises(RelayRLError, match=r"is not a run directory \(no config\.yaml\): the runs in it are .*/run$"):
        load_run(tmp_path)  # the folder above the run
    loaded = load_run(str(tmp_path / "run"))
    assert saved["runner"]["algo"] == "dqn" and loaded.policies["runner"].spec.n_agents == 2
    loaded.close()


def test_a_run_another_process_trains_loads_for_evaluation_but_does_not_train(tmp_path):
    train(build_config(CONFIG), out=tmp_path, verbose=False)
    (run_dir,) = tmp_path.glob("*/0")
    held = RunLock(run_dir)
    held.acquire()  # as the process that trains the run holds it
    try:
        loaded = load_run(run_dir)
        try:
            assert len(loaded.evaluator.greedy(2)) == 2
        finally:
            loaded.close()
        with pytest.raises(RelayRLError, match="is being trained by pid"):
            train(build_config({**CONFIG, "total_steps": 900}), out=tmp_path, verbose=False)
    finally:
        held.release()
    assert is_locked(run_dir) is False
