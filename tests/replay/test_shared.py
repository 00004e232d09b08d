"""The replay several learners share (DASE between learners): rows added in the learners'
order, each learner's draws from its own generator, and the learners' agent tags."""

import copy

import numpy as np
import pytest
import torch

from relayrl.algos.sections import ActorCriticConfig
from relayrl.algos.off_policy import OffPolicyLearner, replay_plan
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.replay.shared import SharedDraws, SharedReplay
from relayrl.sharing.config import SharingConfig

SPEC = GroupSpec("g", ("a0",), (3,), np.dtype(np.float32), 0, (1,), (-1.0,), (1.0,))
SHARING = SharingConfig(select="all", replay="shared", correction="dps")
CONFIG = ActorCriticConfig(hidden=[8], batch_size=16, buffer_size=50, random_steps=0)


def _replay(capacity: int = 50) -> SharedReplay:
    config = CONFIG.model_copy(update={"buffer_size": capacity})
    return SharedReplay(replay_plan(SPEC, "td3", config.learner_params(), SHARING), seed=0)


def _rows(agent: int, n: int, start: float) -> dict[str, np.ndarray]:
    return {
        "obs": np.full((n, 3), start, np.float32) + np.arange(n, dtype=np.float32)[:, None],
        "action": np.zeros((n, 1), np.float32),
        "reward": np.arange(n, dtype=np.float32) + start,
        "next_obs": np.zeros((n, 3), np.float32),
        "discount": np.ones(n, np.float32),
        "agent": np.full(n, agent, np.int16),
    }


def test_the_learners_rows_go_in_in_their_order_and_the_oldest_go_first():
    replay = _replay(capacity=5)
    assert replay.add([_rows(0, 3, 0.0), None, _rows(1, 3, 10.0)]) == 5
    rows = replay.gather(np.arange(5))
    # a ring of 5: the sixth row (agent 1's last) took the slot of the oldest (agent 0's first)
    np.testing.assert_array_equal(rows["reward"], [12.0, 1.0, 2.0, 10.0, 11.0])
    np.testing.assert_array_equal(rows["agent"], [1, 0, 0, 1, 1])
    assert replay.gather(np.array([[4, 1], [1, 4]]))["obs"].shape == (2, 2, 3)


def test_draws_are_uniform_over_the_rows_held_and_resume_exactly():
    replay = _replay()
    draws = SharedDraws(first_agent=1, seed=7)
    draws.source = replay
    with pytest.raises(ValueError, match="empty or not connected"):
        draws.draw(1, 4)
    draws.size = replay.add([_rows(0, 20, 0.0)])
    saved = copy.deepcopy(draws.state_dict())
    batch = draws.draw(3000, 8)
    assert batch["reward"].shape == (3000, 8) and batch["reward"].max() == 19.0 and batch["reward"].min() == 0.0
    counts = np.bincount(batch["reward"].astype(int).ravel(), minlength=20)
    assert counts.min() > 0.8 * counts.mean()  # every held row about as often as the others
    again = SharedDraws(first_agent=1, seed=99)
    again.source = replay
    again.load_state_dict(saved)
    np.testing.assert_array_equal(again.draw(3000, 8)["reward"], batch["reward"])


def _learner(seed: int) -> OffPolicyLearner:
    return OffPolicyLearner(SPEC, "td3", CONFIG, SHARING, torch.device("cpu"), [seed, seed + 1, seed + 2], SectionTimer())


def _fragment(seed: int, steps: int = 20) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(steps + 1, 1, 1, 3)).astype(np.float32)
    return {
        "obs": obs[:-1],
        "action": rng.uniform(-1, 1, (steps, 1, 1, 1)).astype(np.float32),
        "reward": rng.normal(size=(steps, 1, 1)).astype(np.float32),
        "next_obs": obs[1:],
        "terminated": np.zeros((steps, 1, 1), bool),
        "truncated": np.zeros((steps, 1, 1), bool),
        "valid": np.ones((steps, 1, 1), bool),
    }


def test_learners_of_one_shared_replay_tag_their_rows_apart_and_weight_only_the_others():
    replay = _replay()
    learners = [_learner(10), _learner(20)]
    for first, learner in enumerate(learners):
        learner.join_shared_replay(first, replay)
        assert learner.replay is None and "replay" not in learner.state_dict()
    for learner, seed in zip(learners, (1, 2)):
        learner.observe(_fragment(seed))
    size = replay.add([learner.shared_rows() for learner in learners])
    assert size == 40 and [learner.shared_rows() for learner in learners] == [None, None]
    np.testing.assert_array_equal(np.bincount(replay.gather(np.arange(40))["agent"]), [20, 20])
    for learner in learners:
        learner.shared_size(size)
        learner.learn(env_steps=100)
    for first, learner in enumerate(learners):
        report = learner.report(100)
        assert report["new_updates"] == 20  # one per env step, drawn in one gather
        external = report["external_fraction"]
        assert 0.3 < external < 0.7  # about half the draws are the other learner's rows, and only those are weighted
        assert report["dps_weight"] < 1.0


def test_a_learner_without_a_shared_replay_cannot_join_one():
    learner = OffPolicyLearner(SPEC, "td3", CONFIG, SharingConfig(), torch.device("cpu"), [1, 2, 3], SectionTimer())
    with pytest.raises(Exception, match="sharing.replay=shared"):
        learner.join_shared_replay(0, None)


def test_a_draw_the_replay_could_not_serve_changes_nothing():
    replay = _replay()

    class Gone:
        def gather(self, slots: np.ndarray) -> dict[str, np.ndarray]:
            raise ConnectionError("the replay's process is gone")

    draws = SharedDraws(first_agent=0, seed=3)
    draws.size = replay.add([_rows(0, 20, 0.0)])
    draws.source = Gone()
    with pytest.raises(ConnectionError):
        draws.draw(5, 4)
    draws.source = replay
    fresh = SharedDraws(first_agent=0, seed=3)
    fresh.size, fresh.source = draws.size, replay
    np.testing.assert_array_equal(draws.draw(5, 4)["reward"], fresh.draw(5, 4)["reward"])
