"""8-bit screens (a uint8 Box from 0 to 255) reach every learner's networks divided by 255,
and so does an env's 8-bit global state (MAPPO's critic and QMIX's mixer read it): a run on
them writes the same metrics as the same run on the screens already scaled to float32 in
[0, 1], while storage keeps the bytes. Other uint8 observations (Pursuit's counts) are read
as they are."""

import math

import numpy as np
import pytest

from relayrl.algos import ALGORITHMS
from relayrl.experiment import build_config, build_run
from tiny_runs import small_sections

TIMING = ("sps", "updates_per_s", "wall_s", "sample_share")
RUN = {"total_steps": 240, "report_interval": 80, "checkpoint_interval": 10**6, "eval": {"interval": 240, "episodes": 2}}


def _metrics(algo: str, scaled: bool) -> tuple[list[dict], object]:
    actions = "box" if ALGORITHMS[algo].section == "actor_critic" else "discrete"
    env = {"name": "testenvs.screens", "settings": {"scaled": scaled, "actions": actions}, "num_envs": 2}
    run = build_run(build_config({"preset": f"screens-{algo}", **RUN, "env": env, **small_sections(algo)}), None, verbose=False)
    try:
        rows = run.train()
        (group,) = run.venue.venv.groups
    finally:
        run.close()
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows], group


@pytest.mark.parametrize("algo", ["dqn", "ppo", "mappo", "qmix", "masac", "maddpg", "td3"])
def test_a_learner_reads_8_bit_screens_as_the_same_screens_scaled_to_one(algo):
    as_bytes, group = _metrics(algo, scaled=False)
    as_floats, scaled_group = _metrics(algo, scaled=True)
    assert group.pixels and group.obs_dtype == np.uint8 and not scaled_group.pixels
    assert as_bytes[-1]["updates"] > 0
    same = lambda a, b: a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))  # noqa: E731
    assert len(as_bytes) == len(as_floats)
    for left, right in zip(as_bytes, as_floats):
        assert left.keys() == right.keys() and all(same(left[k], right[k]) for k in left), (left, right)


@pytest.mark.parametrize("name", ["pursuit", "pursuit-pz"])
def test_counts_stored_as_bytes_are_not_screens(name):
    run = build_run(build_config({"preset": "counts", **RUN, "env": {"name": name, "settings": {"max_cycles": 20}}}), None, verbose=False)
    try:
        (group,) = run.venue.venv.groups
        assert group.obs_dtype == np.uint8 and not group.pixels
    finally:
        run.close()


def test_gymnasium_screens_are_screens_whichever_way_they_come():
    from testenvs.screens import SCREEN_ID, SCREENS_ID

    envs = {"name": SCREEN_ID, "settings": {"n_agents": 2}}, {"name": "gym-multiagent", "settings": {"env_id": f"testenvs.screens:{SCREENS_ID}"}}
    for env, dtype in zip(envs, (np.float32, np.uint8)):  # K copies hand on float32; a multi-agent env keeps the bytes
        run = build_run(build_config({"preset": "gym-screens", **RUN, "env": env}), None, verbose=False)
        try:
            (group,) = run.venue.venv.groups
            assert group.pixels and group.obs_dtype == dtype and group.obs_shape == (6, 6, 2), env
        finally:
            run.close()


def test_atari_screens_are_screens():
    pytest.importorskip("ale_py")
    run = build_run(build_config({"preset": "pong", **RUN, "env": {"name": "atari", "num_envs": 1}, "on_policy": {"algo": "ppo", "torso": "nature_cnn", "hidden": []}}), None, verbose=False)
    try:
        (group,) = run.venue.venv.groups
        assert group.pixels and group.obs_dtype == np.uint8
    finally:
        run.close()
