"""Centralised critics (MADDPG, MATD3, MASAC): the critic's input layout against a hand-built
joint batch, the straight-through Gumbel-softmax's gradient, MASAC's temperature moving
toward its target entropy, joint replay rows, and learning the corridor."""

import numpy as np
import pytest
import torch

from relayrl.algos.maddpg import MADDPG, MADDPGParams
from relayrl.algos.masac import MASAC, MASACParams
from relayrl.core.errors import ConfigError
from relayrl.core.specs import GroupSpec
from relayrl.experiment import build_config, build_run
from relayrl.experiment.presets import load_preset

CPU = torch.device("cpu")


def _box_spec(n: int = 3, obs: int = 2, act: int = 1) -> GroupSpec:
    return GroupSpec("agent", tuple(f"agent_{i}" for i in range(n)), (obs,), np.dtype(np.float32), 0, (act,), (-1.0,) * act, (1.0,) * act)


def _discrete_spec(n: int = 2, obs: int = 3, actions: int = 4) -> GroupSpec:
    return GroupSpec("agent", tuple(f"agent_{i}" for i in range(n)), (obs,), np.dtype(np.float32), actions)


def _batch(spec: GroupSpec, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Joint rows ``[1, B, N, ...]`` as the centralised learner's replay holds them."""
    n = spec.n_agents
    action = rng.integers(0, spec.n_actions, (1, rows, n)) if spec.n_actions else rng.uniform(-1, 1, (1, rows, n, *spec.action_shape)).astype(np.float32)
    return {
        "obs": rng.normal(size=(1, rows, n, *spec.obs_shape)).astype(np.float32),
        "action": action,
        "reward": rng.normal(size=(1, rows, n)).astype(np.float32),
        "next_obs": rng.normal(size=(1, rows, n, *spec.obs_shape)).astype(np.float32),
        "discount": np.full((1, rows, n), 0.99, np.float32),
        "alive": np.ones((1, rows, n), bool),
    }


def _maddpg(spec: GroupSpec, **changes) -> MADDPG:
    params = MADDPGParams(**{"actor_lr": 1e-3, "critic_lr": 1e-3, "hidden": (16,), "tau": 0.01, "exploration_noise": 0.1, **changes})
    return MADDPG(spec, spec.n_agents, params, CPU, seed=0)


def test_each_critic_sees_every_observation_and_action_with_its_own_agents_action_replaced():
    spec = _box_spec(n=3, obs=2, act=1)
    algorithm = _maddpg(spec)
    batch = {
        "obs": np.arange(12, dtype=np.float32).reshape(1, 2, 3, 2),  # row b, agent j: obs (6b + 2j, 6b + 2j + 1)
        "action": np.array([[[[0.1], [0.2], [0.3]], [[0.4], [0.5], [0.6]]]], np.float32),
        "reward": np.zeros((1, 2, 3), np.float32), "next_obs": np.zeros((1, 2, 3, 2), np.float32),
        "discount": np.ones((1, 2, 3), np.float32), "alive": np.ones((1, 2, 3), bool),
    }
    t = algorithm.tensors(batch)
    own = torch.tensor([[[-1.0], [-4.0]], [[-2.0], [-5.0]], [[-3.0], [-6.0]]])  # [N, B, A]: agent i's own action -(3b + i + 1)
    x = algorithm.critic_input(t["obs"], algorithm.own_actions(t["action"], own))
    assert x.shape == (3, 2, 3 * 2 + 3 * 1)
    for i in range(3):
        for b in range(2):
            replayed = [0.1 + 0.3 * b + 0.1 * j for j in range(3)]
            replayed[i] = -(3 * b + i + 1)
            expected = [*range(6 * b, 6 * b + 6), *replayed]
            np.testing.assert_allclose(x[i, b].numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("n_sets", [3, 1], ids=["own actors", "shared actor"])
def test_each_agents_action_comes_from_its_own_observation(n_sets):
    spec = _box_spec(n=3, obs=2, act=1)
    params = MADDPGParams(actor_lr=1e-3, critic_lr=1e-3, hidden=(16,), tau=0.01, exploration_noise=0.1)
    algorithm = MADDPG(spec, n_sets, params, CPU, seed=0)
    obs = torch.randn(5, 3, 2)
    action, raw = algorithm.policy(algorithm.actor, obs, smooth=False)
    for i in range(3):
        one = algorithm.actor(obs[:, i][None].expand(n_sets, -1, -1))[i if n_sets > 1 else 0]
        torch.testing.assert_close(raw[i], one)


def test_an_own_critic_sees_only_its_agents_observation_and_action():
    """``critic: own``: independent learners on the same joint rows (paper 004's SAC per entity)."""
    spec = _box_spec(n=3, obs=2, act=1)
    algorithm = _maddpg(spec, critic="own")
    t = algorithm.tensors(_batch(spec, 4, np.random.default_rng(2)))
    own = torch.randn(3, 4, 1)
    x = algorithm.critic_input(t["obs"], algorithm.own_actions(t["action"], own))
    assert x.shape == (3, 4, 3)
    for i in range(3):
        torch.testing.assert_close(x[i], torch.cat([t["obs"][:, i], own[i]], dim=-1))


def test_the_straight_through_gumbel_sample_is_one_hot_and_passes_gradients_to_the_logits():
    algorithm = _maddpg(_discrete_spec(actions=4))
    logits = torch.randn(5, 7, 4, requires_grad=True)
    sample = algorithm.straight_through(logits, temperature=1.0)
    one_hot = torch.nn.functional.one_hot(sample.detach().argmax(-1), 4).float()
    torch.testing.assert_close(sample.detach(), one_hot, rtol=0, atol=1e-6)  # exactly one-hot up to the rounding of hard + soft - soft
    (sample * torch.arange(4.0)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


@pytest.mark.parametrize("spec", [_box_spec(), _discrete_spec()], ids=["box", "discrete"])
def test_an_update_moves_every_agents_actor_through_its_critic(spec):
    algorithm = _maddpg(spec, twin_critics=True, policy_delay=1)
    before = [p.detach().clone() for p in algorithm.actor.parameters()]
    _, metrics = algorithm.update(_batch(spec, 32, np.random.default_rng(0)))
    assert np.isfinite(metrics["critic_loss"]) and np.isfinite(metrics["actor_loss"])
    moved = torch.stack([(p.detach() - b).abs().reshape(spec.n_agents, -1).sum(1) for p, b in zip(algorithm.actor.parameters(), before)]).sum(0)
    assert (moved > 0).all(), "each agent's actor got a gradient"


@pytest.mark.parametrize("spec", [_box_spec(), _discrete_spec()], ids=["box", "discrete"])
def test_masacs_temperature_moves_toward_its_target_entropy(spec):
    rng = np.random.default_rng(1)
    params = MASACParams(actor_lr=1e-3, critic_lr=1e-3, alpha_lr=1e-2, hidden=(16,), tau=0.01, initial_alpha=0.5)
    low, high = MASAC(spec, spec.n_agents, params, CPU, seed=0), MASAC(spec, spec.n_agents, params, CPU, seed=0)
    low.target_entropy, high.target_entropy = -50.0, 50.0  # far below, far above what the policies have
    for _ in range(20):
        batch = _batch(spec, 32, rng)
        low.update(batch)
        _, metrics = high.update(batch)
    assert (low.log_alpha.exp() < 0.5).all() and (high.log_alpha.exp() > 0.5).all()
    assert np.isfinite(metrics["entropy"])


def _masac(spec: GroupSpec, **changes) -> MASAC:
    params = MASACParams(**{"actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3, "hidden": (16,), "tau": 0.01, **changes})
    return MASAC(spec, spec.n_agents, params, CPU, seed=0)


@pytest.mark.parametrize("algo", ["masac", "matd3"])
def test_a_common_critic_is_one_for_the_team_and_learns_its_summed_reward(algo):
    """One twin pair reads every observation and action; its target is the agents' rewards
    summed (here with the target critics at 0 and MASAC's temperature at about 0)."""
    spec = _box_spec(n=3, obs=2, act=1)
    algorithm = _masac(spec, critic="common") if algo == "masac" else _maddpg(spec, critic="common", twin_critics=True, policy_noise=0.2, noise_clip=0.5)
    assert algorithm.critic_sets == 1 and [c.layers[0].weight.shape[0] for c in algorithm.critics] == [1, 1]
    batch = _batch(spec, 5, np.random.default_rng(3))
    t = algorithm.tensors(batch)
    assert algorithm.replayed(t).shape == (1, 5, 3 * (2 + 1))
    with torch.no_grad():
        for p in algorithm.critics_target.parameters():
            p.zero_()
        if algo == "masac":
            algorithm.log_alpha.fill_(-60.0)
    y = algorithm.targets(t)
    assert y.shape == (1, 5)
    torch.testing.assert_close(y[0], torch.as_tensor(batch["reward"][0].sum(-1)))


def test_with_a_common_critic_every_actor_steps_with_every_agents_current_action():
    """Two batches that differ only in their replayed actions: with the critics held (a
    learning rate of 1e-12), a common critic's actor step gives the same actors (it reads
    every agent's current action), a joint critic's not (it reads the others' replayed ones)."""
    spec = _box_spec(n=3, obs=2, act=1)
    first = _batch(spec, 16, np.random.default_rng(4))
    second = {**first, "action": np.random.default_rng(5).uniform(-1, 1, first["action"].shape).astype(np.float32)}
    for critic, same in (("common", True), ("joint", False)):
        actors = []
        for batch in (first, second):
            algorithm = _masac(spec, critic=critic, critic_lr=1e-12, auto_alpha=False)
            algorithm.update(batch)
            actors.append(torch.cat([p.detach().reshape(-1) for p in algorithm.actor.parameters()]))
        gap = (actors[0] - actors[1]).abs().max()
        assert (gap < 1e-6) if same else (gap > 1e-5), (critic, gap)


def test_with_a_common_critic_maddpgs_actor_i_steps_at_its_own_action_and_the_others_replayed():
    """HARL's MADDPG: agent i's actor loss is the team critic's value at the replayed joint
    action with agent i's replaced by its actor's, built here by hand (the critic held by a
    learning rate of 1e-12, so the actor step reads the critic as it was)."""
    spec = _box_spec(n=3, obs=2, act=1)
    algorithm = _maddpg(spec, critic="common", critic_lr=1e-12)
    batch = _batch(spec, 4, np.random.default_rng(6))
    t = algorithm.tensors(batch)
    with torch.no_grad():
        own, _ = algorithm.policy(algorithm.actor, t["obs"], smooth=False)
        losses = []
        for i in range(3):
            joint_action = t["action"].clone()
            joint_action[:, i] = own[i]
            x = torch.cat([t["obs"].reshape(4, -1), joint_action.reshape(4, -1)], dim=-1)[None]
            losses.append(-algorithm.critics[0](x)[0, :, 0].mean())
    _, metrics = algorithm.update(batch)
    assert metrics["actor_loss"] == pytest.approx(float(torch.stack(losses).mean()), rel=1e-5)


def _corridor_run(algo: str, steps: int, **changes):
    section = {"algo": algo, "random_steps": 500, "hidden": [32], "batch_size": 64, "buffer_size": 5000, "fragment_length": 4, "updates_per_fragment": 1,
               "actor_lr": 3e-3, "critic_lr": 3e-3, **({"initial_alpha": 0.2, "target_entropy_scale": 0.5} if algo == "masac" else {}), **changes}
    config = build_config({
        "preset": f"corridor-{algo}", "total_steps": steps, "report_interval": 500, "eval": {"interval": steps, "episodes": 8},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4}, "centralised": section,
    })
    run = build_run(config, None, verbose=False)
    run.train()
    run.close()
    return run


@pytest.mark.parametrize(("algo", "critic"), [("maddpg", "joint"), ("maddpg", "common"), ("masac", "joint"), ("masac", "common")])
def test_discrete_centralised_critics_learn_the_corridor(algo, critic):
    """Two runners in corridors of 4 cells, reward 1 at the end (and they leave: their rows'
    alive masks drop them): both reach it greedily once learnt. A greedy policy reaches it
    only if it moves right in each of the 3 cells: an untrained pair does with chance 1/64.
    An update per 4 env steps (``fragment_length``) and learning rates of 3e-3 make it quick;
    MASAC's target entropy of half the uniform policy's lets its policy settle on a side."""
    run = _corridor_run(algo, 3000, critic=critic)
    assert run.reporter.history[-1]["eval_reward_mean"] == 2.0


def _two_teams(**extra) -> dict:
    """Two MADDPG teams on corridor copies of their own (two copies each), relaying the
    quarter of their joint steps with the largest mean |TD error| to each other."""
    section = {"algo": "maddpg", "random_steps": 200, "hidden": [16], "batch_size": 16, "buffer_size": 2000, "fragment_length": 4, "updates_per_fragment": 20}
    return {
        "preset": "corridor-maddpg-relay", "total_steps": 600, "report_interval": 200, "eval": {"interval": 0},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4}, "centralised": section,
        "sharing": {"select": "quantile", "bandwidth": 0.25, "window": 200},
        "policies": {"a": {}, "b": {}}, "match": [{"runner": "a"}, {"runner": "b"}], "relay": {"between": ["a", "b"]}, **extra,
    }


def test_two_teams_of_centralised_critics_relay_joint_steps_at_their_bandwidth():
    run = build_run(build_config(_two_teams()), None, verbose=False)
    run.train()
    run.close()
    sent = {pid: sum(row[f"relayed_out/{pid}"] for row in run.reporter.history) for pid in "ab"}
    # each team sends at most a quarter of its 300 joint steps: the small corridor's identical steps tie at the quantile
    assert all(0.02 * 300 < n <= 0.3 * 300 for n in sent.values()), sent
    for pid, other in (("a", "b"), ("b", "a")):  # its own joint rows (one per env step of its two copies) and what the other sent
        assert run.learners[pid].replay.size[0] == 300 + sent[other]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relay": None}, r"policy 'a' trains centralised critics: .* name it in relay.between"),
        ({"policies": {"a": {}, "b": {"dqn": {"lr": 1e-4}}}}, r"relay.between mixes teams of centralised critics \['a'\], which relay joint steps of their group, with per-agent learners \['b'\]"),
    ],
)
def test_a_centralised_team_selects_only_for_other_teams_of_its_kind(change, message):
    with pytest.raises(ConfigError, match=message):
        build_config(_two_teams(**change))


def test_a_centralised_config_that_updates_more_often_than_it_steps_says_so_with_the_fix(recwarn):
    """Shortening ``fragment_length`` alone multiplies the updates per env step: 50 updates
    every 8 env steps warn with the ratio and the fix; the defaults (50 per 1,000) do not."""
    config = _two_teams()
    config["centralised"] = {"algo": "masac", "fragment_length": 8}
    with pytest.warns(UserWarning, match=r"updates_per_fragment=50 gradient steps every fragment_length=8 env steps make 6\.25 updates of 1000 joint rows "
                                         r"per env step \(125x the defaults' 0\.05\).*\(updates_per_fragment=1 for fragment_length=8\)"):
        build_config(config)
    recwarn.clear()
    config["centralised"] = {"algo": "masac"}
    build_config(config)
    assert not [w for w in recwarn if "updates_per_fragment" in str(w.message)]


def test_sac_per_entity_is_one_single_agent_policy_whose_workers_are_the_entities():
    """Paper 004, Fig. 11's SAC per entity as the Arena assigns it (the preset's match): each
    entity a worker of its own of one one-agent policy, so every entity's step of every copy
    is one row of that policy's replay, and its critic reads one entity's observation and action."""
    config = load_preset("navigation-sac-entity").model_dump(mode="json")
    config["env"]["num_envs"] = 2
    config["centralised"].update(random_steps=100, batch_size=32, hidden=[16], fragment_length=8, updates_per_fragment=1)
    config.update(total_steps=200, eval={"interval": 0})
    run = build_run(build_config(config), None, verbose=False)
    run.train()
    run.close()
    learner = run.learners["sac"]
    assert list(run.policies) == ["sac"] and learner.spec.n_agents == 1
    assert learner.replay.size[0] == 3 * 200  # the 3 entities of each of the 200 env steps (100 steps of 2 copies)
    observation, action = 14, 2  # own velocity and position, the targets and the other agents relative to it; a 2D force
    assert learner.algorithm.critics[0].layers[0].weight.shape[1] == observation + action


def test_no_gradient_clipping_is_a_bound_never_reached():
    """``max_grad_norm: null`` (HARL's and the AI Arena's code clip nothing) steps exactly as
    a bound no gradient reaches, and a small bound steps otherwise."""
    spec, batch = _box_spec(), _batch(_box_spec(), 32, np.random.default_rng(0))

    def critics_after_updates(max_grad_norm: float | None) -> list[torch.Tensor]:
        algorithm = _maddpg(spec, max_grad_norm=max_grad_norm)
        for _ in range(3):
            algorithm.update(batch)
        return [p.detach().clone() for p in algorithm.critic_params + algorithm.actor_params]

    unclipped, unreached, clipped = critics_after_updates(None), critics_after_updates(1e9), critics_after_updates(1e-3)
    assert all(torch.equal(a, b) for a, b in zip(unclipped, unreached))
    assert not all(torch.equal(a, b) for a, b in zip(unclipped, clipped))
