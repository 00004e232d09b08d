"""Installed PettingZoo, MAgent2, mpe2 and LBF envs by name, against every kind of learner:
each pair trains 400 env steps through the command line, or is refused before training
with an ``error:`` that names the fix. Slow (about 5 s a pair): ``pytest -m slow``.
docs/results/user_envs/README.md (2026-11-28) lists what this sweep found."""

import csv
from pathlib import Path

import pytest

from relayrl.cli import main

ENVS = {  # name: (env section, whether its actions are Box)
    "adversary": ("{name: mpe2.simple_adversary_v3, settings: {max_cycles: 25}}", False),
    "push-box": ("{name: mpe2.simple_push_v3, settings: {max_cycles: 25, continuous_actions: true}}", True),
    "world-comm": ("{name: mpe2.simple_world_comm_v3, settings: {max_cycles: 25}}", False),
    "speaker-listener": ("{name: mpe2.simple_speaker_listener_v4, settings: {max_cycles: 25}}", False),
    "treasure": ("{name: mpe2.collect_treasure_v1, settings: {max_cycles: 25}}", False),
    "line-box": ("{name: mpe2.simple_line_v1, settings: {max_cycles: 25, continuous_actions: true}}", True),
    "knights-archers-zombies": ("{name: pettingzoo.butterfly.knights_archers_zombies_v11, settings: {max_cycles: 60}}", False),
    "pursuit": ("{name: pettingzoo.sisl.pursuit_v5, settings: {max_cycles: 60}}", False),
    "combined-arms": ("{name: magent2.environments.combined_arms_v6, settings: {map_size: 16, max_cycles: 60}}", False),
    "adversarial-pursuit": ("{name: magent2.environments.adversarial_pursuit_v4, settings: {map_size: 12, max_cycles: 60}}", False),
    "lbf": ("{name: Foraging-8x8-2p-2f-v3}", False),
}
LEARNERS = {  # name: (config sections, the action spaces it acts in)
    "dqn": ("dqn: {learning_starts: 100, batch_size: 16, buffer_size: 4000}", {False}),
    "qmix": ("qmix: {batch_size: 2, buffer_size: 50, max_episode_length: 200}", {False}),
    "ppo": ("on_policy: {algo: ppo, rollout_length: 40}", {False, True}),
    "mappo": ("on_policy: {algo: mappo, rollout_length: 40}", {False, True}),
    "seac": ("on_policy: {algo: seac, rollout_length: 40}\nsharing: {select: all}", {False, True}),
    "maddpg": ("centralised: {algo: maddpg, random_steps: 100, batch_size: 32, buffer_size: 4000, fragment_length: 40, updates_per_fragment: 2}", {False, True}),
    "masac": ("centralised: {algo: masac, random_steps: 100, batch_size: 32, buffer_size: 4000, fragment_length: 40, updates_per_fragment: 2}", {False, True}),
    "td3": ("actor_critic: {algo: td3, random_steps: 100, batch_size: 32, buffer_size: 4000}", {True}),
}


@pytest.mark.slow
@pytest.mark.parametrize("learner", list(LEARNERS))
@pytest.mark.parametrize("env", list(ENVS))
def test_a_user_env_trains_with_each_learner_or_is_refused_with_the_fix(env, learner, tmp_path, capsys):
    section, box = ENVS[env]
    sections, acts_in = LEARNERS[learner]
    config = tmp_path / f"{env}-{learner}.yaml"
    config.write_text(
        f"env: {section}\ntotal_steps: 400\nreport_interval: 200\ncheckpoint_interval: 400\neval: {{interval: 200, episodes: 1}}\n{sections}\n"
    )
    code = main(["train", str(config), "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    if box not in acts_in:
        assert code == 2 and "error:" in err and "train one of them" in err and "Traceback" not in err, err[-2000:]
        return
    assert code == 0, err[-2000:]
    (metrics,) = Path(tmp_path / "runs").glob("*/0/metrics.csv")
    with metrics.open() as handle:
        assert int(list(csv.DictReader(handle))[-1]["env_steps"]) == 400
