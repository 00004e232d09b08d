"""On-policy learners in whole runs: a recurrent learner's memory follows the acting one's,
its runs resume exactly from a checkpoint inside a rollout, and LBF's masks reach it."""

import math
import re

import numpy as np
import pytest
import torch

from relayrl.core.errors import ConfigError
from relayrl.experiment import build_config, build_run
from relayrl.experiment.checkpoint import checkpoint_steps, list_checkpoints
from relayrl.experiment.presets import preset_dict
from relayrl.experiment.presets.common import merge
from round_runs import cut_copy, rows

TIMING = ("sps", "updates_per_s", "wall_s", "sample_share")


def _recurrent(total: int = 400) -> dict:
    """Recurrent PPO on two corridor copies, rollouts of 16 steps in chunks of 4, collected
    6 steps at a time (checkpoints fall inside rollouts)."""
    return {
        "preset": "recurrent-ppo", "total_steps": total, "report_interval": 100, "checkpoint_interval": 200, "keep_checkpoints": 4,
        "eval": {"interval": 200, "episodes": 2},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 3, "max_steps": 8}, "num_envs": 2},
        "on_policy": {"algo": "ppo", "recurrent": True, "chunk_length": 4, "rollout_length": 16, "hidden": [16], "minibatches": 2},
        "backend": {"fragment_steps": 6},
    }


def test_a_recurrent_learner_remembers_what_its_acting_networks_remembered():
    """Fragment by fragment, the hidden states the learner recomputes for its steps end where
    the rollout's carry is (zeroed where an episode ended): so the log-probabilities it
    stores are those of the actions' own draws."""
    run = build_run(build_config(_recurrent()), None, verbose=False)
    run.start()
    learner = run.learners["corridor"] if "corridor" in run.learners else next(iter(run.learners.values()))
    checked = 0
    for _ in range(5):  # 30 steps: across a rollout's end (16) and episode ends (8 steps at most)
        run.iteration()
        carry = run.collector.rollout.carry[next(iter(run.collector.rollout.carry))].numpy()
        expected = learner.hidden["actor_h"] * ~learner.last_over[..., None]
        np.testing.assert_allclose(carry, expected, rtol=1e-5, atol=1e-6)
        checked += int(learner.last_over.any())
    run.close()
    assert learner.rollouts == 1 and checked > 0, "an update and some episode ends happened in between"


def test_a_recurrent_run_resumes_exactly_from_inside_a_rollout(tmp_path):
    config = build_config(_recurrent())
    straight = build_run(config, tmp_path / "straight", verbose=False)
    straight.train()
    straight.close()
    last = straight.reporter.history[-1]
    assert last["updates"] > 0 and math.isfinite(last["td_loss"])
    saved = [checkpoint_steps(p) for p in list_checkpoints(tmp_path / "straight" / "checkpoints")]
    assert (saved[0] // 2) % 16 != 0, "the first checkpoint falls inside a rollout"
    cut_copy(tmp_path / "straight", tmp_path / "resumed", saved[0])
    again = build_run(config, tmp_path / "resumed", verbose=False)
    again.train()
    again.close()
    assert rows(tmp_path / "resumed" / "metrics.csv", TIMING) == rows(tmp_path / "straight" / "metrics.csv", TIMING)


def test_seac_trains_on_lbf_within_its_masks():
    pytest.importorskip("lbforaging")
    config = build_config({
        "preset": "lbf-seac", "total_steps": 400, "report_interval": 200, "eval": {"interval": 400, "episodes": 2},
        "env": {"name": "Foraging-8x8-2p-2f-v3", "settings": {"kwargs": {"max_episode_steps": 25}}, "num_envs": 2},
        "on_policy": {"algo": "seac", "hidden": [16]}, "sharing": {"select": "quantile", "bandwidth": 0.1},
    })
    run = build_run(config, None, verbose=False)
    run.train()
    run.close()
    last = run.reporter.history[-1]
    assert run.venue.venv.groups[0].masked and last["updates"] == 40 and math.isfinite(last["td_loss"])
    assert 0 < last["bandwidth_actual"] < 0.5, "each agent offered about a tenth of its steps"


def test_ppo_on_atari_screens_trains_its_torso_and_resumes_exactly_inside_an_episode(tmp_path):
    """The Pong preset at a tiny scale: the convolutional torso the actor and critic share
    learns, and a run stopped mid-episode (Pong's games outlast it) continues bit for bit,
    the emulators restored from the checkpoint."""
    pytest.importorskip("ale_py")
    config = build_config(merge(preset_dict("pong-ppo"), {
        "total_steps": 96, "report_interval": 32, "checkpoint_interval": 48, "keep_checkpoints": 4,
        "eval": {"interval": 96, "episodes": 1}, "env": {"num_envs": 2, "settings": {"max_frames": 2000}},
        "on_policy": {"rollout_length": 8, "minibatches": 2, "epochs": 2},
    }))
    straight = build_run(config, tmp_path / "straight", verbose=False)
    before = [p.detach().clone() for p in straight.learners["player"].algorithm.torso.parameters()]
    straight.train()
    straight.close()
    after = list(straight.learners["player"].algorithm.torso.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, after)), "every torso layer learnt"
    cut_copy(tmp_path / "straight", tmp_path / "resumed", 48)
    again = build_run(config, tmp_path / "resumed", verbose=False)
    again.train()
    again.close()
    assert rows(tmp_path / "resumed" / "metrics.csv", TIMING) == rows(tmp_path / "straight" / "metrics.csv", TIMING)
    for p, q in zip(after, again.learners["player"].algorithm.torso.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_a_learner_warns_where_it_would_read_large_screens_flat(recwarn):
    """Screens through flat MLPs: a warning names the fix, for PPO and MADDPG's critics on
    Atari's 84 x 84 x 4 (84 x 84 x 4 + 6 action inputs x 64 units) and TD3's actor on
    CarRacing's 96 x 96 x 3 (x 256 units); the preset's convolutions give none."""
    pytest.importorskip("ale_py")
    flat = merge(preset_dict("pong-ppo"), {"on_policy": {"torso": "flat", "hidden": [64]}})
    with pytest.warns(UserWarning, match=r"84x84x4 screens, read flat: the actor's first layer alone has 1,806,336 weights .* set on_policy\.torso=nature_cnn"):
        build_run(build_config(flat), None, verbose=False).close()
    recwarn.clear()
    build_run(build_config(preset_dict("pong-ppo")), None, verbose=False).close()
    assert not [w for w in recwarn if "read flat" in str(w.message)]
    centralised = {**{k: v for k, v in preset_dict("pong-ppo").items() if k not in ("on_policy", "preset")}, "preset": "pong-maddpg",
                   "env": {"name": "atari", "settings": {"game": "pong"}, "num_envs": 1},
                   "centralised": {"algo": "maddpg", "hidden": [64], "buffer_size": 100, "batch_size": 8}}
    with pytest.warns(UserWarning, match=r"84x84x4 screens, read flat: each critic's first layer alone has 1,806,720 weights .* "
                                         r"these learners have no convolutional torso: shrink the screens .* or train ppo, mappo or seac with on_policy\.torso"):
        build_run(build_config(centralised), None, verbose=False).close()
    box = {"preset": "car-racing-td3", "env": {"name": "CarRacing-v3", "settings": {"n_agents": 1}}, "actor_critic": {"algo": "td3", "buffer_size": 100, "batch_size": 8}}
    with pytest.warns(UserWarning, match=r"96x96x3 screens, read flat: the actor's first layer alone has 7,077,888 weights .* no convolutional torso"):
        build_run(build_config(box), None, verbose=False).close()


def test_a_critic_or_mixer_reading_a_large_state_flat_is_warned_of(recwarn):
    """MAPPO's critic on the state and QMIX's mixer read the env's global state flat: two
    96 x 96 x 2 screens side by side (36,864 numbers) are warned of, naming the fix, beside
    the warnings of the agents' own 96 x 96 x 2 screens read flat."""
    env = {"name": "testenvs.screens", "settings": {"side": 96}}
    build_run(build_config({"env": env, "on_policy": {"algo": "mappo", "hidden": [64]}}), None, verbose=False).close()
    build_run(build_config({"env": env, "qmix": {"algo": "qmix", "hidden": 16, "buffer_size": 20, "batch_size": 2}}), None, verbose=False).close()
    said = [str(w.message) for w in recwarn if "read flat" in str(w.message)]
    expected = [
        r"agent's observations are 96x96x2 screens, read flat: the actor's first layer alone has 1,179,648 weights .*on_policy\.torso=nature_cnn",
        r"agent's global state is 36864 numbers, read flat: the critic's first layer alone has 2,359,296 weights .*on_policy\.critic_input=obs, torso=nature_cnn",
        r"agent's observations are 96x96x2 screens, read flat: the agents' first layer alone has 294,976 weights .*QMIX's agents have no convolutional torso",
        r"agent's global state is 36864 numbers, read flat: the mixer's hypernetworks alone has .* qmix\.mixer=vdn",
    ]
    assert len(said) == len(expected) and all(re.search(pattern, message) for pattern, message in zip(expected, said)), said


@pytest.mark.parametrize(
    ("section", "fix"),
    [({"on_policy": {"algo": "mappo", "hidden": [16]}}, r"on_policy\.critic_input=joint_obs"), ({"qmix": {"algo": "qmix", "hidden": 16}}, r"qmix\.mixer=vdn or none")],
)
def test_a_learner_of_the_global_state_on_an_env_without_one_names_both_fixes(section, fix):
    """The corridor has no state_space: MAPPO's critic and QMIX's mixer say where relayrl
    finds a state (state() beside a declared state_space) and what to set instead."""
    config = {"preset": "no-state", "total_steps": 100, "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 3, "max_steps": 8}}, **section}
    with pytest.raises(ConfigError, match=rf"gives no.* \(relayrl passes an env's state\(\) to its learners where the env declares its state_space .*\): declare the env's state_space, or set {fix}"):
        build_run(build_config(config), None, verbose=False)
