"""Sequences gathered from transition storage equal the same windows cut from stored
episodes (Predator-Prey, copies ending at different times), burn-in included; where the
ring has overwritten a window's past, the burn-in shrinks instead of crossing into another
episode."""

import numpy as np
import pytest

from relayrl.arena.policy import RandomPolicy
from relayrl.arena.rollout import Rollout
from relayrl.envs.predator_prey import PredatorPreyVectorEnv
from relayrl.replay import ReplayPlan
from relayrl.replay.episodes import EpisodeStorage
from relayrl.replay.sequences import TransitionSequences
from relayrl.replay.spans import episode_spans

MAX = 9
GAMES = 3


def _fragments(n: int):
    env = PredatorPreyVectorEnv(GAMES, x_size=5, y_size=5, n_predators=3, n_stags=0, n_hares=1, max_cycles=MAX)
    (spec,) = env.groups
    rollout = Rollout(env, {"p": RandomPolicy(spec, 0)}, [{"predator": "p"}])
    rollout.reset(2)
    return spec, [rollout.collect(4, 0)["p"] for _ in range(n)]


def _storages(spec, capacity: int, sequence_length: int, burn_in: int, tbptt: int | None):
    episodes = EpisodeStorage(ReplayPlan(1, 100, EpisodeStorage.fields(spec, MAX)).build(), MAX, sequence_length, burn_in, tbptt)
    transitions = TransitionSequences(ReplayPlan(1, capacity, TransitionSequences.fields(spec, MAX)).build(), sequence_length, burn_in, tbptt)
    return episodes, transitions


def _slot(transitions: TransitionSequences, episode: int, step: int, length: int) -> int:
    """The transition row of ``step`` of the ``episode``-th finished episode (episodes finish
    in the order of their last step's stamp, then worker)."""
    stored = {k: v[0] for k, v in transitions.replay.storage().items()}
    ends = np.flatnonzero(stored["over"][: transitions.size])
    ends = ends[np.lexsort((ends % GAMES, stored["stamp"][ends]))]
    return int((ends[episode] - (length - 1 - step) * GAMES) % transitions.replay.capacity)


def _assert_same_span(got: dict, expected: dict) -> None:
    """Equal where it matters: flags everywhere, step fields where the step exists, what the
    agents saw up to the row after each row's last step."""
    assert got.keys() == expected.keys()
    for name in ("exists", "trained", "ends", "cut"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    for row, exists in enumerate(expected["exists"]):
        length = int(exists.sum())
        for name in ("action", "reward", "terminated", "truncated", "valid"):
            np.testing.assert_array_equal(got[name][row, exists], expected[name][row, exists], err_msg=name)
        for name in ("obs", "state", "action_mask", "previous"):
            np.testing.assert_array_equal(got[name][row, : length + 1], expected[name][row, : length + 1], err_msg=name)


@pytest.mark.parametrize(("sequence_length", "burn_in", "tbptt"), [(MAX, 0, None), (3, 2, None), (4, 3, 2)])
def test_windows_from_transitions_equal_windows_of_stored_episodes(sequence_length, burn_in, tbptt):
    spec, fragments = _fragments(12)
    episodes, transitions = _storages(spec, 1000, sequence_length, burn_in, tbptt)
    finished = 0
    for fragment in fragments:
        _, a = episodes.add(fragment)
        _, b = transitions.add(fragment)
        assert a == b
        finished += a
    assert finished == episodes.size > 4
    rows = {k: v[0, :finished] for k, v in episodes.replay.storage().items()}
    lengths = rows["filled"].sum(axis=1)
    assert len(set(lengths)) > 1  # a caught hare ends some episodes before the limit
    compared = 0
    for e, length in enumerate(lengths):
        for step in range(length):
            one = {k: v[e : e + 1] for k, v in rows.items()}
            expected = episode_spans(one, np.array([step]), sequence_length, burn_in, tbptt)
            got = transitions.gather(np.array([_slot(transitions, e, step, length)]))
            _assert_same_span(got, expected)
            compared += 1
    assert compared == lengths.sum()


def test_a_batch_gathers_every_window_at_once():
    spec, fragments = _fragments(12)
    episodes, transitions = _storages(spec, 1000, 3, 2, None)
    for fragment in fragments:
        episodes.add(fragment), transitions.add(fragment)
    rows = {k: v[0, : episodes.size] for k, v in episodes.replay.storage().items()}
    lengths = rows["filled"].sum(axis=1)
    picks = np.array([(e, s) for e in range(len(lengths)) for s in (0, lengths[e] // 2, lengths[e] - 1)])
    expected = episode_spans({k: v[picks[:, 0]] for k, v in rows.items()}, picks[:, 1], 3, 2, None)
    got = transitions.gather(np.array([_slot(transitions, e, s, lengths[e]) for e, s in picks]))
    _assert_same_span(got, expected)


def test_an_overwritten_past_shortens_the_burn_in():
    spec, fragments = _fragments(12)
    capacity = 7 * GAMES  # the ring holds the last 7 steps of each copy
    _, transitions = _storages(spec, capacity, 2, 5, None)
    for fragment in fragments:
        transitions.add(fragment)
    stored = {k: v[0] for k, v in transitions.replay.storage().items()}
    oldest = (int(transitions.replay.write_position[0]) + np.arange(GAMES)) % capacity  # each copy's oldest step still held
    later = (oldest + 2 * GAMES) % capacity
    inside = (stored["step"][oldest] > 0) & (stored["step"][later] == stored["step"][oldest] + 2)
    assert inside.any(), "no copy's oldest held step is inside an episode that runs on"
    w = int(np.flatnonzero(inside)[0])
    first = transitions.gather(oldest[w : w + 1])
    assert first["trained"][0, 0] and not first["cut"][0].any()  # no burn-in: its past is overwritten
    assert (first["previous"][0, 0] == -1).all()  # and so is the action before it
    then = transitions.gather(later[w : w + 1])  # two steps on: a burn-in of 2, not the 5 asked for
    np.testing.assert_array_equal(then["trained"][0, :3], [False, False, True])
    assert then["cut"][0, 2] and (then["previous"][0, 0] == -1).all()
    np.testing.assert_array_equal(then["obs"][0, 0], stored["obs"][oldest[w]])


def test_ending_workers_stops_every_window_where_a_truncation_would():
    spec, fragments = _fragments(6)
    _, reference = _storages(spec, 1000, 4, 2, None)
    _, transitions = _storages(spec, 1000, 4, 2, None)
    cut = np.array([0])
    marked = {k: v.copy() for k, v in fragments[2].items()}
    marked["truncated"][-1, cut] |= marked["valid"][-1, cut] & ~marked["terminated"][-1, cut]
    marked["over"][-1, cut] = True
    for k, fragment in enumerate(fragments):
        reference.add(marked if k == 2 else fragment)
        transitions.add(fragment)
        if k == 2:
            _, ended = transitions.end_workers(cut)
            assert ended == (fragment["over"][-1, 0] == 0)  # one episode was in flight, unless it had just ended
    slots = np.arange(transitions.size)
    expected, got = reference.gather(slots), transitions.gather(slots)
    for name in got:
        if name not in ("ends", "truncated"):
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    # only the cut step differs: marked as the end there, and every window through it stops after it
    differs = expected["ends"] != got["ends"]
    assert differs.any() and not got["ends"][differs].any()
    last = got["exists"].sum(axis=1) - 1
    assert (np.nonzero(differs)[1] == last[np.nonzero(differs)[0]]).all()
