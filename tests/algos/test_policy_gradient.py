"""The policy-gradient algorithms' math against plain computations: SEAC's weighting of other
agents' steps, PPO's clipped objective, the action distributions; and PPO learning a
small task."""

import math

import numpy as np
import pytest
import torch

from relayrl.algos.on_policy import shared_rows
from relayrl.algos.policy_gradient import PolicyGradient
from relayrl.algos.sections import OnPolicyConfig
from relayrl.algos.seac import SEAC
from relayrl.core.specs import GroupSpec
from relayrl.experiment import build_config, build_run

DEVICE = torch.device("cpu")


def _spec(n_agents: int = 2, n_actions: int = 3, obs: int = 4) -> GroupSpec:
    return GroupSpec("agent", tuple(f"agent_{i}" for i in range(n_agents)), (obs,), np.dtype(np.float32), n_actions)


def _box_spec() -> GroupSpec:
    return GroupSpec("agent", ("agent_0",), (3,), np.dtype(np.float32), 0, (2,), (-1.0, 0.0), (1.0, 2.0))


def _rows(rng: np.random.Generator, p: int, m: int, spec: GroupSpec) -> dict[str, np.ndarray]:
    """Own rows ``[P, M, ...]`` of an update with arbitrary numbers."""
    return {
        "obs": rng.normal(size=(p, m, *spec.obs_shape)).astype(np.float32),
        "agent": np.zeros((p, m), np.int64),
        "action": rng.integers(0, spec.n_actions, (p, m)),
        "critic_obs": rng.normal(size=(p, m, *spec.obs_shape)).astype(np.float32),
        "logp": rng.normal(-1.0, 0.3, (p, m)).astype(np.float32),
        "scaled_value": rng.normal(size=(p, m)).astype(np.float32),
        "advantage": rng.normal(size=(p, m)).astype(np.float32),
        "returns": rng.normal(size=(p, m)).astype(np.float32),
        "valid": rng.random((p, m)) < 0.8,
    }


def test_seac_weighs_each_other_agents_steps_by_the_policies_ratio():
    """Agent i's added loss is lambda * sum over k != i of mean over k's steps of
    ratio * (-log pi_i(a|o) * (y - V_i(o)) + value_coef * (V_i(o) - y)^2), ratio =
    pi_i(a|o) / pi_k(a|o) held constant: computed here row by row with the networks."""
    spec = _spec(n_agents=3)
    config = OnPolicyConfig(algo="seac", seac_coef=0.7, value_coef=0.5)
    seac = SEAC(spec, config, 3, DEVICE, seed=1)
    rng = np.random.default_rng(0)
    m = 5
    own = _rows(rng, 3, m, spec)
    own["valid"][:] = True
    own["valid"][2, 3:] = False  # agent 2 took 3 steps only
    receive = np.ones((3, 3 * m), bool)
    receive[np.repeat(np.eye(3, dtype=bool), m, axis=1)] = False  # nobody receives its own steps
    receive &= own["valid"].reshape(1, -1)
    receive[0, m + 1] = False  # agent 1's second step did not reach agent 0 (a narrower selection)
    shared = shared_rows(own, receive)

    b = {k: torch.as_tensor(v) for k, v in {**own, **shared}.items()}
    loss, _ = seac.extra_loss(b)

    steps = own["valid"].sum(axis=1)
    expected = np.zeros(3)
    for i in range(3):
        for k in range(3):
            for j in range(m):
                if not receive[i, k * m + j]:
                    continue
                obs = torch.as_tensor(own["obs"][k, j]).expand(3, 1, -1)
                action = torch.as_tensor(own["action"][k, j]).expand(3, 1)
                logp = seac.evaluate(obs, torch.zeros(3, 1, dtype=torch.long), action, None)[0][i, 0].item()
                value = seac.values(torch.as_tensor(own["critic_obs"][k, j]).expand(3, 1, -1), torch.zeros(3, 1, dtype=torch.long))[i, 0].item()
                ratio = math.exp(logp - own["logp"][k, j])
                y = own["returns"][k, j]
                expected[i] += ratio * (-logp * (y - value) + 0.5 * (value - y) ** 2) / steps[k]
    assert loss.detach().numpy() == pytest.approx(0.7 * expected, rel=1e-5, abs=1e-7)


def test_a_selection_at_full_bandwidth_is_seac_and_a_narrow_one_sends_only_its_largest_advantages():
    from relayrl.algos.on_policy import OnPolicyLearner
    from relayrl.core.profiler import SectionTimer
    from relayrl.sharing.config import SharingConfig

    spec = _spec(n_agents=2)
    config = OnPolicyConfig(algo="seac", rollout_length=4)
    rng = np.random.default_rng(3)
    fragment = {
        "obs": rng.normal(size=(4, 3, 2, 4)).astype(np.float32),
        "next_obs": rng.normal(size=(4, 3, 2, 4)).astype(np.float32),
        "action": rng.integers(0, 3, (4, 3, 2)),
        "reward": rng.normal(size=(4, 3, 2)).astype(np.float32),
        "terminated": np.zeros((4, 3, 2), bool),
        "truncated": np.zeros((4, 3, 2), bool),
        "valid": np.ones((4, 3, 2), bool),
        "over": np.zeros((4, 3), bool),
    }
    sent = {}
    for select, bandwidth in (("all", 0.1), ("quantile", 1.0), ("quantile", 0.25)):
        learner = OnPolicyLearner(spec, "seac", config, SharingConfig(select=select, bandwidth=bandwidth), DEVICE, [0, 1, 2, 3], SectionTimer())
        learner.observe(fragment)
        learner.learn(12)
        stats = learner.report(12)["relay"]
        assert list(stats.offered) == [12, 12]
        sent[(select, bandwidth)] = list(stats.sent)
    assert sent[("all", 0.1)] == sent[("quantile", 1.0)] == [12, 12]
    assert all(0 < s <= 4 for s in sent[("quantile", 0.25)]), "about a quarter of each agent's 12 steps (strictly above the 75% quantile)"


def test_ppo_clips_the_ratio_and_the_value_change():
    spec = _spec(n_agents=1)
    config = OnPolicyConfig(algo="ppo", agent_id=False, clip=0.2, value_clip=0.2, value_loss="mse", value_coef=0.5, entropy_coef=0.0, normalize_values=False)
    ppo = PolicyGradient(spec, config, 1, DEVICE, seed=0)
    own = _rows(np.random.default_rng(1), 1, 16, spec)
    b = {k: torch.as_tensor(v) for k, v in own.items()}
    loss, parts = ppo.own_loss(b)
    with torch.no_grad():
        logp, _ = ppo.evaluate(b["obs"], b["agent"], b["action"], None)
        value = ppo.values(b["critic_obs"], b["agent"])
    ratio, a, valid = (logp - b["logp"]).exp().numpy()[0], own["advantage"][0], own["valid"][0]
    surrogate = np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a)
    v, old, y = value.numpy()[0], own["scaled_value"][0], own["returns"][0]
    value_loss = np.maximum((v - y) ** 2, (old + np.clip(v - old, -0.2, 0.2) - y) ** 2)
    expected = -surrogate[valid].mean() + 0.5 * value_loss[valid].mean()
    assert loss[0].item() == pytest.approx(expected, rel=1e-5)
    assert float(parts["clip_fraction"][0]) == pytest.approx((np.abs(ratio - 1) > 0.2)[valid].mean())


def test_masked_actions_are_never_drawn_and_have_no_probability():
    spec = _spec(n_agents=1, n_actions=4)
    ppo = PolicyGradient(spec, OnPolicyConfig(agent_id=False), 1, DEVICE, seed=0)
    mask = np.zeros((1, 500, 4), bool)
    mask[..., 1] = mask[..., 3] = True
    obs = np.random.default_rng(0).normal(size=(1, 500, 4)).astype(np.float32)
    actions, _ = ppo.act(obs, None, 1.0, mask)
    assert set(np.unique(actions)) == {1, 3}
    _, entropy = ppo.evaluate(torch.as_tensor(obs), torch.zeros(1, 500, dtype=torch.long), torch.as_tensor(actions), torch.as_tensor(mask))
    assert float(entropy.max()) <= math.log(2) + 1e-6, "two allowed actions: at most log 2 of entropy"


@pytest.mark.parametrize("bounds", ["squash", "clip"])
def test_box_log_probabilities_are_the_distributions_own(bounds):
    """Squashed: the density of c + h tanh(u), u ~ N(mean, std) (torch's transformed
    distribution); clipped: the Gaussian's density inside the bounds and its tail's mass at
    them."""
    spec = _box_spec()
    ppo = PolicyGradient(spec, OnPolicyConfig(agent_id=False, action_bounds=bounds, log_std_init=0.3), 1, DEVICE, seed=0)
    obs = np.random.default_rng(0).normal(size=(1, 200, 3)).astype(np.float32)
    actions, _ = ppo.act(obs, None, 1.0)
    low, high = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
    assert ((actions >= low) & (actions <= high)).all()
    t_obs, t_act = torch.as_tensor(obs), torch.as_tensor(actions)
    logp, _ = ppo.evaluate(t_obs, torch.zeros(1, 200, dtype=torch.long), t_act, None)
    with torch.no_grad():
        mean = ppo.actor(t_obs)[0]
    normal = torch.distributions.Normal(mean, torch.full_like(mean, math.exp(0.3)))
    centre, half = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0])
    if bounds == "squash":
        transforms = [torch.distributions.TanhTransform(), torch.distributions.AffineTransform(centre, half)]
        inner = t_act.clamp(torch.tensor(low) + 1e-4, torch.tensor(high) - 1e-4).float()  # away from the bounds, where atanh is exact
        reference = torch.distributions.TransformedDistribution(normal, transforms).log_prob(inner).sum(-1)
        logp, _ = ppo.evaluate(t_obs, torch.zeros(1, 200, dtype=torch.long), inner, None)
        assert logp.detach().numpy() == pytest.approx(reference.numpy(), abs=1e-3)
    else:
        at_high, at_low = t_act >= torch.tensor(high).float(), t_act <= torch.tensor(low).float()
        assert bool(at_high.any() or at_low.any()), "some draws were clipped"
        per_dim = torch.where(at_high, torch.log(1 - normal.cdf(torch.tensor(high).float())), torch.where(at_low, torch.log(normal.cdf(torch.tensor(low).float())), normal.log_prob(t_act)))
        assert logp.detach().numpy() == pytest.approx(per_dim.sum(-1).numpy(), abs=1e-4)


def test_a_critic_of_an_input_every_agent_shares_computes_one_value_per_env_step():
    """MAPPO's critic on all agents' observations: its input is the same for the 3 agents of
    an env step, so it runs on one row of each step and gives that value to all three:
    the values the critic gives every row; per-agent inputs keep a row each."""
    spec = _spec(n_agents=3)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(5, 3, 4)).astype(np.float32)  # 5 env steps of 3 agents
    for critic_input, rows in (("joint_obs", 5), ("obs", 15)):
        algorithm = PolicyGradient(spec, OnPolicyConfig(algo="mappo" if critic_input != "obs" else "ppo", critic_input=critic_input), 1, DEVICE, 0)
        features = algorithm.critic_features(obs, None).reshape(1, 15, -1)
        agent = torch.as_tensor(np.tile(np.arange(3), 5))[None]
        seen = []
        hook = algorithm.critic.register_forward_hook(lambda module, args, out: seen.append(args[0].shape[1]))
        values = algorithm.values(features, agent)
        hook.remove()
        assert seen == [rows]
        every_row = algorithm.critic(algorithm._critic_in(torch.as_tensor(features), agent))[0].squeeze(-1)
        assert torch.allclose(values, every_row, rtol=0, atol=1e-6)  # a product of fewer rows may round differently
        if critic_input == "joint_obs":
            assert torch.equal(values[0, 0::3], values[0, 1::3]) and torch.equal(values[0, 0::3], values[0, 2::3])


def test_a_recurrent_critic_of_an_input_every_agent_shares_keeps_one_memory_per_env_copy():
    """The same critic with a GRU, over a fragment of 6 steps of 2 env copies whose
    episodes begin at step 3 of copy 0: run on one row per copy, its values and memories are
    those the GRU gives every row, and its memory begins again only where every agent of
    the copy begins (at copy 1's step 4 one agent's own episode begins: no reset)."""
    spec = _spec(n_agents=3)
    rng = np.random.default_rng(1)
    config = OnPolicyConfig(algo="mappo", critic_input="joint_obs", recurrent=True, hidden=[16], chunk_length=6, rollout_length=6)
    algorithm = PolicyGradient(spec, config, 1, DEVICE, 0)
    steps, copies = 6, 2
    obs = rng.normal(size=(steps, copies, 3, 4)).astype(np.float32)
    critic_obs = algorithm.critic_features(obs, None)
    begins = np.zeros((steps, copies, 3), bool)
    begins[3, 0] = True
    begins[4, 1, 2] = True
    h0 = np.repeat(rng.normal(size=(copies, 1, 16)).astype(np.float32), 3, axis=1)  # one memory per copy, on each agent's row
    rows = {
        "obs": obs.reshape(1, steps, -1, 4), "action": rng.integers(0, 3, (1, steps, copies * 3)),
        "agent": np.tile(np.arange(3), (1, steps, copies)), "critic_obs": critic_obs.reshape(1, steps, copies * 3, -1),
        "next_critic_obs": critic_obs.reshape(1, steps, copies * 3, -1), "begins": begins.reshape(1, steps, -1),
        "actor_h": np.zeros((1, copies * 3, 16), np.float32), "critic_h": h0.reshape(1, copies * 3, 16),
    }
    seen = []
    hook = algorithm.critic.cell.register_forward_hook(lambda module, args, out: seen.append(args[0].shape[1]))
    computed = algorithm.behaviour(rows)
    hook.remove()
    copy_begins = np.repeat(begins.all(-1, keepdims=True), 3, axis=-1).reshape(1, steps, -1)
    with torch.no_grad():
        value, states = algorithm.critic.unroll(*(torch.as_tensor(rows[k]).float() for k in ("critic_obs", "critic_h")), torch.as_tensor(copy_begins))
    assert torch.allclose(computed["scaled"], value.squeeze(-1), rtol=0, atol=1e-6)
    assert torch.allclose(computed["critic_last"], states[:, -1], rtol=0, atol=1e-6)
    assert seen == [steps * copies]  # the step after each step (V of the next observation), on one row per copy, not per agent
    assert not torch.allclose(computed["critic_h"][0, 5, 3:6], torch.zeros(3, 16))  # copy 1 kept its memory through agent 2's own begin


@pytest.mark.parametrize(("unit", "minibatches"), [("agent", 2), ("env_step", 2), ("agent", 1)])
def test_a_recurrent_critic_of_the_state_trains_on_the_memory_it_acted_with(unit, minibatches):
    """MAPPO's recurrent critic on both runners' observations, one memory per env copy. The
    runners of a copy end their episodes at different steps, so an agent's own beginning
    differs from its copy's. Minibatches of either unit (each agent's chunks on their own, the
    critic computing each copy's chunk once; or whole copies' chunks), and one minibatch of
    the whole rollout, give before the first gradient step the values the critic gave when
    it acted."""
    config = build_config({
        "preset": f"corridor-memory-{unit}-{minibatches}", "total_steps": 64, "report_interval": 64, "eval": {"interval": 0},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4},
        "on_policy": {"algo": "mappo", "critic_input": "joint_obs", "recurrent": True, "chunk_length": 8, "rollout_length": 16,
                      "hidden": [8], "minibatches": minibatches, "minibatch_unit": unit},
    })
    run = build_run(config, None, verbose=False)
    algorithm = run.learners["runner"].algorithm
    firsts = []
    update = algorithm.update

    def first_values(batch, weights=None):
        if not firsts:
            b = {k: torch.as_tensor(v) for k, v in batch.items()}
            with torch.no_grad():
                firsts.append((algorithm._outputs(b, whole=algorithm.whole_steps)[1], b["scaled_value"].flatten(1, 2), b["begins"], b["critic_begins"], b.get("critic_rows")))
        return update(batch, weights)

    algorithm.update = first_values
    run.train()
    run.close()
    values, stored, begins, critic_begins, computed = firsts[0]
    assert algorithm.whole_steps == (unit == "env_step" or minibatches == 1)
    if not algorithm.whole_steps:  # agents' chunks of the same copy were computed once
        assert computed is not None and len(computed) < begins.shape[2]
    assert torch.allclose(values, stored, rtol=0, atol=1e-5)
    assert bool((begins & ~critic_begins).any())  # some agent began on its own inside a chunk: the copy's memory went on


@pytest.mark.filterwarnings("error")
def test_a_critic_of_the_joint_observations_of_a_lone_agent_trains_without_warnings():
    """One agent's joint observations are its own, a read-only broadcast: the rollout keeps
    an array of its own (torch warns on read-only arrays, and would share their memory)."""
    config = build_config({
        "preset": "corridor-lone-mappo", "total_steps": 64, "report_interval": 32, "eval": {"interval": 0},
        "env": {"name": "corridor", "settings": {"n_agents": 1, "length": 4, "max_steps": 12}, "num_envs": 2},
        "on_policy": {"algo": "mappo", "critic_input": "joint_obs", "rollout_length": 16, "hidden": [8]},
    })
    run = build_run(config, None, verbose=False)
    run.train()
    run.close()
    assert run.reporter.history[-1]["env_steps"] == 64


CORRIDOR_LEARNERS = {
    "ppo": {"algo": "ppo"},
    "a2c": {"algo": "a2c", "lr": 3e-3},
    # a critic on both runners' observations: minibatches of whole env steps (its value
    # computed once per env step), and of each agent's chunks (recurrent)
    "mappo": {"algo": "mappo", "critic_input": "joint_obs", "minibatches": 4, "minibatch_unit": "env_step"},
    "mappo-recurrent": {"algo": "mappo", "critic_input": "joint_obs", "recurrent": True, "chunk_length": 8, "minibatches": 2},
}


@pytest.mark.parametrize("algo", sorted(CORRIDOR_LEARNERS))
def test_a_policy_gradient_learns_the_corridor(algo):
    """Two runners in corridors of 4 cells, reward 1 at the end: a random policy reaches it
    in about half the episodes (eval 1.0 of 2); both runners reach it once learnt."""
    section = {"rollout_length": 16, "hidden": [32], **CORRIDOR_LEARNERS[algo]}
    config = build_config({
        "preset": f"corridor-{algo}", "total_steps": 4000, "report_interval": 1000, "eval": {"interval": 4000, "episodes": 8},
        "env": {"name": "corridor", "settings": {"n_agents": 2, "length": 4, "max_steps": 12}, "num_envs": 4}, "on_policy": section,
    })
    run = build_run(config, None, verbose=False)
    run.train()
    run.close()
    assert run.reporter.history[-1]["eval_reward_mean"] == 2.0


def _fragment(rng: np.random.Generator, steps: int) -> dict[str, np.ndarray]:
    """``steps`` env steps of 3 copies of 2 agents with arbitrary numbers."""
    return {
        "obs": rng.normal(size=(steps, 3, 2, 4)).astype(np.float32),
        "next_obs": rng.normal(size=(steps, 3, 2, 4)).astype(np.float32),
        "action": rng.integers(0, 3, (steps, 3, 2)),
        "reward": rng.normal(size=(steps, 3, 2)).astype(np.float32),
        "terminated": np.zeros((steps, 3, 2), bool),
        "truncated": np.zeros((steps, 3, 2), bool),
        "valid": np.ones((steps, 3, 2), bool),
        "over": np.zeros((steps, 3), bool),
    }


def test_a_copy_of_other_networks_drops_the_rollout_the_replaced_networks_took():
    """Population-based training copies a better member's networks into a member whose
    rollout is half full: its next update trains on steps the copied networks took and
    valued only, the same rollout the source stores for those steps."""
    from relayrl.algos.on_policy import OnPolicyLearner
    from relayrl.core.profiler import SectionTimer
    from relayrl.sharing.config import SharingConfig

    config = OnPolicyConfig(algo="ppo", rollout_length=4)
    member, source = (OnPolicyLearner(_spec(), "ppo", config, SharingConfig(), DEVICE, [seed, 1, 2, 3], SectionTimer()) for seed in (0, 7))
    rng = np.random.default_rng(5)
    member.observe(_fragment(rng, 2))
    member.copy_networks_from(source)
    after = _fragment(rng, 4)
    member.observe(after)
    source.observe(after)
    (rollout,), (expected,) = member.state_dict()["ready"], source.state_dict()["ready"]
    assert member.state_dict()["filled"] == 0
    for key in ("logp", "value", "next_value", "obs"):
        np.testing.assert_array_equal(rollout[key], expected[key])
