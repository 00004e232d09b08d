"""The one off-policy learner over every registered algorithm: the same contract (act,
observe, learn, state) whatever the algorithm, and resumes that continue exactly."""

import copy

import numpy as np
import pytest
import torch

from relayrl.algos import ALGORITHMS
from relayrl.algos.sections import ActorCriticConfig
from relayrl.algos.sections import DQNConfig
from relayrl.algos.off_policy import OffPolicyLearner
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.nets.model_config import ModelConfig
from relayrl.sharing.config import SharingConfig

T, E, N = 4, 2, 3
# the algorithms this learner feeds (the others bring their own: qmix's episode learner)
TRANSITION_ALGORITHMS = [algo for algo in ALGORITHMS if ALGORITHMS[algo].learner is None]
DISCRETE = GroupSpec("g", ("a0", "a1", "a2"), (5,), np.dtype(np.float32), 4)
CONTINUOUS = GroupSpec("g", ("a0", "a1", "a2"), (5,), np.dtype(np.float32), 0, (2,), (-1.0, -2.0), (1.0, 2.0))


def _setup(algo: str) -> tuple[GroupSpec, object]:
    if algo == "dqn":
        return DISCRETE, DQNConfig(batch_size=8, buffer_size=200, learning_starts=0, fragment_length=4, target_update_interval=8)
    return CONTINUOUS, ActorCriticConfig(algo=algo, hidden=[16], batch_size=8, buffer_size=200, random_steps=0)


def _learner(algo: str, sharing: SharingConfig | None = None) -> OffPolicyLearner:
    spec, config = _setup(algo)
    model = ModelConfig(hiddens=[16], head_hidden=16)
    return OffPolicyLearner(spec, algo, config, sharing or SharingConfig(), torch.device("cpu"), [1, 2, 3], SectionTimer(), model=model)


def _fragment(learner: OffPolicyLearner, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(T + 1, E, N, 5)).astype(np.float32)
    actions = np.stack([learner.act(obs[t], None, 10_000)[0] for t in range(T)])
    return {
        "obs": obs[:-1],
        "action": actions,
        "reward": rng.normal(size=(T, E, N)).astype(np.float32),
        "next_obs": obs[1:],
        "terminated": rng.random((T, E, N)) < 0.1,
        "truncated": np.zeros((T, E, N), bool),
        "valid": np.ones((T, E, N), bool),
    }


@pytest.mark.parametrize("algo", TRANSITION_ALGORITHMS)
def test_every_registered_algorithm_learns_through_the_one_learner(algo):
    learner = _learner(algo)
    spec = learner.spec
    obs = np.zeros((E, N, 5), np.float32)
    actions, carry = learner.act(obs, None, None)
    assert carry is None and actions.shape == (E, N, *spec.action_shape)
    for seed in range(3):
        assert learner.observe(_fragment(learner, seed)) == T * E * N
        learner.learn(env_steps=(seed + 1) * T * E)
    np.testing.assert_array_equal(learner.replay.size, [3 * T * E] * N)
    gradient_steps = 3 * T * E // learner.params.fragment_length * learner.params.updates_per_fragment
    assert learner.updates == gradient_steps
    report = learner.report(3 * T * E)
    assert report["new_updates"] == gradient_steps and np.isfinite(report["td_loss"])
    batch = learner.replay.sample(8).data
    assert learner.algorithm.td_error(batch).shape == (N, 8)


@pytest.mark.parametrize("algo", TRANSITION_ALGORITHMS)
def test_a_learner_restored_from_its_state_continues_exactly(algo):
    straight, restored = _learner(algo), _learner(algo)
    for seed in range(2):
        straight.observe(_fragment(straight, seed))
        straight.learn(env_steps=(seed + 1) * T * E)
    fragment = _fragment(straight, 7)
    restored.load_state_dict(copy.deepcopy(straight.state_dict()))
    for learner in (straight, restored):
        learner.observe(copy.deepcopy(fragment))
        learner.learn(env_steps=3 * T * E)
    for a, b in zip(straight.algorithm.state_dict().values(), restored.algorithm.state_dict().values()):
        if isinstance(a, dict) and all(isinstance(v, torch.Tensor) for v in a.values()):
            for key in a:
                torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    obs = np.ones((E, N, 5), np.float32)
    np.testing.assert_array_equal(straight.act(obs, None, 10_000)[0], restored.act(obs, None, 10_000)[0])


def test_a_relay_learner_shares_and_a_shared_replay_learner_tags():
    relaying = _learner("dqn", SharingConfig(select="all"))
    relaying.observe(_fragment(relaying, 0))
    np.testing.assert_array_equal(relaying.replay.size, [T * E * N] * N)  # own + both others'
    tagged = _learner("td3", SharingConfig(select="all", replay="shared", correction="dps"))
    tagged.observe(_fragment(tagged, 0))
    assert tagged.replay.n_buffers == 1 and int(tagged.replay.size[0]) == T * E * N
    np.testing.assert_array_equal(np.bincount(tagged.replay.storage()["agent"][0, : T * E * N]), [T * E] * N)
    tagged.learn(env_steps=T * E)
    report = tagged.report(T * E)
    assert tagged.metric_columns == ("actor_loss", "dps_weight", "external_fraction")
    assert 0 < report["dps_weight"] <= 1 and 0 < report["external_fraction"] < 1


def test_scoring_transitions_leaves_the_update_stream_untouched():
    """A TD3 sender's |td| uses the noiseless target, so relaying does not move the smoothing
    noise of its updates."""
    scored, plain = _learner("td3"), _learner("td3")
    fragment = _fragment(scored, 0)
    for learner in (scored, plain):
        learner.observe(copy.deepcopy(fragment))
    scored.algorithm.td_error(scored.replay.sample(8).data)
    plain.replay.sample(8)  # the same replay draw, without scoring
    for learner in (scored, plain):
        learner.learn(env_steps=T * E)
    for p, q in zip(scored.algorithm.critics.parameters(), plain.algorithm.critics.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_an_unknown_algorithm_names_the_registered_ones():
    with pytest.raises(KeyError, match="unknown algorithm .coma.; registered: a2c, ddpg, dqn, maddpg, mappo, masac, matd3, ppo, qmix, sac, seac, td3"):
        ALGORITHMS["coma"]


def test_a_learner_relays_what_its_agents_selected_to_every_agent_of_another():
    sharing = SharingConfig(select="quantile", bandwidth=0.5, priority="sender_td")
    sender, receiver = _learner("dqn", sharing), _learner("dqn", sharing)
    sender.exports = True
    for seed in range(3):
        sender.observe(_fragment(sender, seed))
    rows, sent = sender.outgoing()
    stats = sender.relay.drain()
    assert 0 < sent == stats.sent.sum() and sender.outgoing() == (None, 0)  # what the selector picked, handed out once
    assert set(rows) == {*sender.fields, "priority"} and (rows["priority"] >= 0).all()
    before = receiver.replay.size.copy()
    receiver.incoming([rows, {k: v[:1] for k, v in rows.items()}])
    np.testing.assert_array_equal(receiver.replay.size, before + sent + 1)  # every agent stores every relayed row
    stored = receiver.replay.storage()
    np.testing.assert_array_equal(stored["obs"][2, : sent], rows["obs"])


@pytest.mark.parametrize("new_priority", ["max", "td", "one"])
def test_new_transitions_enter_at_the_replays_max_priority_or_at_their_own_td_error(new_priority):
    """Schaul et al. 2016 give a new transition the replay's largest priority; RLlib's
    worker-side prioritization (the SUPER reference code's Battle) its own |TD error| from
    the current networks, stored as (|td| + eps) ** alpha; RLlib without it a |TD error| of 1."""
    spec = DISCRETE
    config = DQNConfig(batch_size=8, buffer_size=200, learning_starts=0, fragment_length=4, target_update_interval=8, new_priority=new_priority)
    learner = OffPolicyLearner(spec, "dqn", config, SharingConfig(), torch.device("cpu"), [1, 2, 3], SectionTimer(), model=ModelConfig(hiddens=[16], head_hidden=16))
    learner.observe(_fragment(learner, 0))
    learner.learn(env_steps=T * E)  # updates raise some priorities above the fresh ones
    before = learner.replay.priorities()[:, : T * E].max(1)
    fragment = _fragment(learner, 1)
    probe = copy.deepcopy(learner.nstep)  # what observe will store, for the expected values
    rows, _ = learner._per_set(probe.add(copy.deepcopy(fragment)))
    expected = (np.abs(learner.algorithm.td_error(rows)) + config.priority_eps) ** config.alpha
    learner.observe(fragment)
    new = learner.replay.priorities()[:, T * E : 2 * T * E]
    if new_priority == "td":
        np.testing.assert_allclose(new, expected, rtol=1e-5)
    elif new_priority == "one":
        np.testing.assert_allclose(new, (1 + config.priority_eps) ** config.alpha)
    else:
        np.testing.assert_allclose(new, np.broadcast_to(new[:, :1], new.shape))  # one value per buffer: its largest so far
        assert (new[:, 0] >= before * (1 - 1e-6)).all() and not np.allclose(new, expected, rtol=1e-3)


def test_td_priorities_need_a_prioritized_replay():
    with pytest.raises(ValueError, match="new_priority=td sets .* set dqn.prioritized=true"):
        DQNConfig(prioritized=False, new_priority="td")
