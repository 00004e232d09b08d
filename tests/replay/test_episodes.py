"""Whole episodes from the rollout's fragments (Predator-Prey, copies ending at different
times), padded with a filled mask, stored and sampled as replay rows."""

import numpy as np
import pytest

from relayrl.arena.policy import RandomPolicy
from relayrl.arena.rollout import Rollout
from relayrl.envs.predator_prey import PredatorPreyVectorEnv
from relayrl.replay import ReplayBuffer
from relayrl.replay.episodes import EpisodeBuilder


def _rollout(max_cycles: int = 9, games: int = 3):
    env = PredatorPreyVectorEnv(games, x_size=5, y_size=5, n_predators=3, n_stags=0, n_hares=2, max_cycles=max_cycles)
    (spec,) = env.groups
    rollout = Rollout(env, {"p": RandomPolicy(spec, 0)}, [{"predator": "p"}])
    rollout.reset(1)
    return env, rollout


def test_episodes_are_the_steps_of_each_copy_with_the_final_observation():
    env, rollout = _rollout()
    builder = EpisodeBuilder(max_length=9)
    steps = [rollout.collect(1, 0)["p"] for _ in range(60)]  # one step at a time: the reference record
    episodes = [e for e in (builder.add(f) for f in steps) if e is not None]
    # replay the record per copy: an episode is the copy's steps between two ends
    expected: list[tuple[list, list, list]] = []
    open_ = {w: ([], [], []) for w in range(3)}
    for f in steps:
        for w in range(3):
            obs, actions, rewards = open_[w]
            obs.append(f["obs"][0, w]), actions.append(f["action"][0, w]), rewards.append(f["reward"][0, w])
            if f["over"][0, w]:
                obs.append(f["next_obs"][0, w])
                expected.append(open_[w])
                open_[w] = ([], [], [])
    got = {name: np.concatenate([e[name] for e in episodes]) for name in episodes[0]}
    assert len(got["filled"]) == len(expected) > 3
    lengths = got["filled"].sum(axis=1)
    assert set(lengths) > {9} and min(lengths) < 9  # hares caught early end some episodes
    # episodes come out in the order their copies finished: match them by content
    for obs, actions, rewards in expected:
        n = len(actions)
        hits = [
            i for i in range(len(lengths))
            if lengths[i] == n and np.array_equal(got["obs"][i, : n + 1], np.stack(obs)) and np.array_equal(got["action"][i, :n], np.stack(actions))
        ]
        assert hits, "an episode of the record is missing"
        i = hits[0]
        np.testing.assert_array_equal(got["reward"][i, :n], np.stack(rewards))
        assert not got["obs"][i, n + 1 :].any() and not got["action"][i, n:].any()
        assert got["state"].shape[1:] == (10, 75) and got["action_mask"].shape[1:] == (10, 3, 6)


def test_episodes_are_replay_rows():
    env, rollout = _rollout()
    builder = EpisodeBuilder(max_length=9)
    stored = None
    for _ in range(8):
        done = builder.add(rollout.collect(4, 0)["p"])
        if done is None:
            continue
        if stored is None:
            stored = ReplayBuffer(1, 50, builder.fields(), prioritized=True, seed=0)
        stored.add({k: v[None] for k, v in done.items()})
    batch = stored.sample(16)
    assert batch.data["obs"].shape == (1, 16, 10, 3, 5, 5, 3) and batch.data["filled"].shape == (1, 16, 9)
    assert batch.data["filled"][..., 0].all()  # every stored episode has at least one step


def test_an_episode_longer_than_max_length_is_named():
    _, rollout = _rollout(max_cycles=20)
    builder = EpisodeBuilder(max_length=5)
    with pytest.raises(ValueError, match="ran past max_length=5"):
        for _ in range(30):
            builder.add(rollout.collect(1, 0)["p"])


def _truncated_at_the_end(fragment: dict, workers: np.ndarray) -> dict:
    """The fragment with the episodes of ``workers`` ending as truncations at its last step."""
    marked = {k: v.copy() for k, v in fragment.items()}
    marked["truncated"][-1, workers] |= marked["valid"][-1, workers] & ~marked["terminated"][-1, workers]
    marked["over"][-1, workers] = True
    return marked


def _by_content(episodes: list) -> list:
    episodes = [e for e in episodes if e is not None]
    rows = {name: np.concatenate([e[name] for e in episodes]) for name in episodes[0]}
    return sorted(tuple(rows[name][i].tobytes() for name in sorted(rows)) for i in range(len(rows["filled"])))


def test_ending_workers_stores_their_episodes_as_a_truncation_at_the_last_step_would():
    _, rollout = _rollout(max_cycles=9)
    fragments = [rollout.collect(4, 0)["p"] for _ in range(5)]
    cut = np.array([1])
    reference, builder = EpisodeBuilder(max_length=9), EpisodeBuilder(max_length=9)
    expected = [reference.add(f) for f in fragments[:2]] + [reference.add(_truncated_at_the_end(fragments[2], cut))]
    expected += [reference.add(f) for f in fragments[3:]]
    got = [builder.add(f) for f in fragments[:3]] + [builder.end_workers(cut)]
    assert builder.end_workers(cut) is None  # nothing in flight is left to end
    got += [builder.add(f) for f in fragments[3:]]
    assert got[3] is not None and len(got[3]["filled"]) == 1 and got[3]["truncated"][0].any()  # worker 1's episode
    assert _by_content(got) == _by_content(expected)
