"""A learning policy that starts from a trained one (``policies.<id>: {checkpoint: PATH}``
or ``pretrained``): its networks, targets and statistics are the trained learner's, its
optimisers, replay and exploration start fresh, and its own checkpoints take over on resume."""

import pytest
import torch

from relayrl.core.errors import CheckpointError, ConfigError
from relayrl.experiment import build_config, build_run, train
from relayrl.experiment.checkpoint import list_checkpoints

CORRIDOR = {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4}
SECTIONS = {
    "dqn": {"dqn": {"learning_starts": 100, "buffer_size": 1000, "batch_size": 8, "lr": 1e-3}, "model": {"hiddens": [16], "head_hidden": 16}},
    "ppo": {"on_policy": {"algo": "ppo", "rollout_length": 16, "hidden": [16]}},
    "maddpg": {"centralised": {"algo": "maddpg", "random_steps": 100, "hidden": [16], "batch_size": 16, "buffer_size": 1000, "fragment_length": 4, "updates_per_fragment": 1}},
    "masac": {"centralised": {"algo": "masac", "random_steps": 100, "hidden": [16], "batch_size": 16, "buffer_size": 1000, "fragment_length": 4, "updates_per_fragment": 1}},
}


def _config(algo: str, total: int = 512, **extra) -> dict:
    return {"preset": f"warm-{algo}", "env": CORRIDOR, "total_steps": total, "report_interval": 256, "checkpoint_interval": 512,
            "eval": {"interval": 0}, **SECTIONS[algo], **extra}


def _tensors(tree) -> dict[str, torch.Tensor]:
    """Every tensor of a nested state, by its path."""
    found = {}

    def walk(node, path):
        if isinstance(node, torch.Tensor):
            found[path] = node
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}/{key}")

    walk(tree, "")
    return found


def _networks(algorithm) -> dict[str, torch.Tensor]:
    """The algorithm's state without its optimisers' and generators' entries."""
    state = algorithm.state_dict()
    return _tensors({k: v for k, v in state.items() if not (isinstance(v, dict) and set(v) == {"state", "param_groups"}) and k != "generator"})


@pytest.mark.parametrize("algo", ["dqn", "ppo", "maddpg", "masac"])
def test_a_learning_policy_starts_from_the_trained_learners_networks_targets_included(tmp_path, algo):
    trained = train(build_config(_config(algo)), out=tmp_path, verbose=False)
    source = trained.learners["runner"].algorithm
    (run_dir,) = tmp_path.glob("*/0")
    warm = build_run(build_config(_config(algo, preset=f"warm-{algo}-2", policies={"runner": {"checkpoint": str(run_dir)}})), None, verbose=False)
    fresh = build_run(build_config(_config(algo, preset=f"warm-{algo}-2")), None, verbose=False)
    try:
        started, theirs, new = _networks(warm.learners["runner"].algorithm), _networks(source), _networks(fresh.learners["runner"].algorithm)
        assert started.keys() == theirs.keys() and len(started) >= 4  # online and target, or actor, critic(s) and targets
        for key in started:
            torch.testing.assert_close(started[key], theirs[key], rtol=0, atol=0)
        assert any(not torch.equal(new[key], theirs[key]) for key in new)
        optimizers = [v for v in warm.learners["runner"].algorithm.state_dict().values() if isinstance(v, dict) and set(v) == {"state", "param_groups"}]
        assert optimizers and all(not o["state"] for o in optimizers)  # Adam's moments start fresh
        assert warm.learners["runner"].updates == 0
        assert warm.train()[-1]["env_steps"] == 512
    finally:
        warm.close()
        fresh.close()


def test_a_warm_started_run_resumes_from_its_own_checkpoint_without_its_source(tmp_path):
    train(build_config(_config("dqn")), out=tmp_path / "source", verbose=False)
    (source,) = (tmp_path / "source").glob("*/0")
    config = _config("dqn", total=1024, preset="warm-dqn-2", policies={"runner": {"checkpoint": str(source)}})
    first = train(build_config({**config, "total_steps": 512}), out=tmp_path, verbose=False)
    after_first = _networks(first.learners["runner"].algorithm)
    (run_dir,) = tmp_path.glob("warm-dqn-2-*/0")
    source.rename(tmp_path / "moved")  # a resume no longer needs the run it started from
    resumed = build_run(build_config(config), run_dir, verbose=False)
    try:
        resumed.start()
        for key, value in _networks(resumed.learners["runner"].algorithm).items():
            torch.testing.assert_close(value, after_first[key], rtol=0, atol=0)
    finally:
        resumed.close()
    assert "policies_from" in (run_dir / "provenance.yaml").read_text()


def test_a_warm_start_of_another_algorithm_or_kind_is_refused_before_training(tmp_path):
    train(build_config(_config("dqn")), out=tmp_path, verbose=False)
    (run_dir,) = tmp_path.glob("*/0")
    with pytest.raises(CheckpointError, match=r"'runner' was trained as dqn with param_sharing=False; this run has ppo"):
        build_run(build_config(_config("ppo", policies={"runner": {"checkpoint": str(run_dir)}})), None, verbose=False)
    with pytest.raises(ConfigError, match=r"agents applies to kind=frozen only"):
        build_config(_config("dqn", policies={"runner": {"checkpoint": str(run_dir), "agents": [0, 1]}}))
    with pytest.raises(ConfigError, match=r"checkpoint/pretrained apply to kind=frozen .* and kind=learning .*, not random"):
        build_config(_config("dqn", policies={"runner": {"kind": "random", "checkpoint": str(run_dir)}}))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match=r"policy 'runner' starts from a trained policy but .* has no checkpoint"):
        build_run(build_config(_config("dqn", policies={"runner": {"checkpoint": str(empty)}})), None, verbose=False)
    assert list_checkpoints(run_dir / "checkpoints")  # the source is only read
