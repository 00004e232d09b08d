"""Configs: presets validate, overrides reach every key, bad input fails before training."""

import sys
from dataclasses import replace

import pytest

from relayrl.algos import ALGORITHMS, Capabilities
from relayrl.core.errors import ConfigError, MissingExtraError
from relayrl.envs.registry import ENVS
from relayrl.experiment import apply_overrides, build_config, load_preset, preset_dict, preset_names
from relayrl.sharing.config import CORRECTIONS
from relayrl.sharing.selectors import SELECTORS, SelectionRule

ISSUE_PRESETS = [
    "pursuit-dqn",
    "pursuit-ddqn",
    "pursuit-paramshare",
    "pursuit-shareall",
    "pursuit-uniform",
    "pursuit-super-quantile",
    "pursuit-super-gaussian",
    "pursuit-super-stochastic",
]


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_validates(name):
    config = load_preset(name)
    assert config.preset == name


@pytest.mark.parametrize("name", ISSUE_PRESETS)
def test_pursuit_presets_carry_the_paper_hyperparameters(name):
    c = load_preset(name)
    assert c.total_steps == 800_000
    d = c.dqn
    assert (d.lr, d.batch_size, d.buffer_size, d.target_update_interval, d.fragment_length) == (1.6e-4, 32, 120_000, 1000, 4)
    assert (d.epsilon_start, d.epsilon_end, d.epsilon_steps, d.gamma, d.grad_clip) == (0.1, 0.001, 100_000, 0.99, 40.0)
    assert (d.alpha, d.beta, d.priority_eps, d.n_step, d.learning_starts) == (0.6, 0.4, 1e-6, 1, 1000)
    s = c.env.settings
    assert (s.x_size, s.n_evaders, s.n_pursuers, s.obs_range, s.n_catch, s.max_cycles) == (16, 30, 8, 7, 2, 500)
    assert s.shared_reward is False and s.surround is True
    assert c.model.conv_channels == [32, 64, 64] and c.model.kernel_size == 2


@pytest.mark.parametrize("domain, opponent, team", [("battle", "red", "blue"), ("adversarial-pursuit", "predator", "prey")])
def test_magent_presets_carry_the_paper_hyperparameters_and_teams(domain, opponent, team):
    c = load_preset(f"{domain}-super-quantile")
    d = c.dqn
    assert (d.lr, d.batch_size, d.buffer_size, d.target_update_interval, d.fragment_length) == (1e-4, 32, 90_000, 1200, 5)
    assert (d.epsilon_start, d.epsilon_end, d.epsilon_steps, d.alpha, d.dueling) == (0.1, 0.001, 100_000, 0.6, True)
    assert c.total_steps == 300_000 and c.report_interval == 6000
    assert c.policies[opponent].kind == "frozen" and c.policies[opponent].pretrained == f"{domain}-pretrain"
    assert c.report_group == team and c.sharing.select == "quantile" and c.match == []
    coevolving = load_preset(f"{domain}-coevolve-super-quantile")
    algo, section, sharing = coevolving.recipe(opponent)
    assert coevolving.policies[opponent].kind == "learning" and sharing.select == "none" and coevolving.recipe(team)[2].select == "quantile"
    assert (section.double_q, section.dueling, section.prioritized, section.param_sharing, section.lr) == (True, True, True, False, 1e-4)
    pretrain = load_preset(f"{domain}-pretrain")
    assert pretrain.policies == {} and pretrain.sharing.select == "none"
    assert pretrain.total_steps == {"battle": 300_000, "adversarial-pursuit": 600_000}[domain]


def test_battle_settings_are_the_papers():
    s = load_preset("battle-ddqn").env.settings
    assert (s.map_size, s.max_cycles, s.step_reward, s.dead_penalty, s.attack_penalty, s.attack_opponent_reward) == (
        18, 1000, -0.005, -0.1, -0.1, 0.2,
    )
    a = load_preset("adversarial-pursuit-ddqn").env.settings
    assert (a.map_size, a.max_cycles, a.tag_penalty) == (18, 500, -0.2)


def test_preset_variants_differ_where_they_should():
    assert load_preset("pursuit-dqn").dqn.double_q is False
    assert load_preset("pursuit-paramshare").dqn.param_sharing is True
    assert load_preset("pursuit-super-quantile").sharing.select == "quantile"
    assert load_preset("pursuit-super-quantile").sharing.bandwidth == 0.1
    assert load_preset("pursuit-shareall").sharing.select == "all"


def test_every_key_is_overridable_by_dotted_path():
    data = apply_overrides(
        preset_dict("pursuit-ddqn"),
        ["dqn.lr=1e-4", "env.settings.n_evaders=5", "sharing.team=[0, 2]", "total_steps=1234", "sharing.select=gaussian"],
    )
    c = build_config(data)
    assert (c.dqn.lr, c.env.settings.n_evaders, c.sharing.team, c.total_steps, c.sharing.select) == (1e-4, 5, [0, 2], 1234, "gaussian")


def test_config_hash_ignores_seed_budget_and_execution_only():
    base = load_preset("pursuit-ddqn")
    runtime = {"seed": 3, "total_steps": 5, "torch_threads": 2, "keep_freed_memory": False, "device": "cuda", "checkpoint_interval": 7}
    assert base.config_hash() == base.model_copy(update=runtime).config_hash()
    assert base.config_hash() != build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["env.num_envs=4"])).config_hash()
    assert base.config_hash() != build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["dqn.lr=1e-3"])).config_hash()


def test_unknown_preset_names_the_choices():
    with pytest.raises(ConfigError, match="unknown preset 'pursuit-super-quantil'.*pursuit-super-quantile"):
        preset_dict("pursuit-super-quantil")


def test_unknown_key_names_the_path():
    with pytest.raises(ConfigError, match=r"(?s)dqn\.learning_rate: Extra inputs.*unknown key; allowed here: .*adam_eps.*lr"):
        build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["dqn.learning_rate=1e-3"]))


def test_bad_value_names_the_path_value_and_allowed():
    with pytest.raises(ConfigError, match=r"sharing\.select: Input should be 'quantile'.*got 'topk'"):
        build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["sharing.select=topk"]))
    with pytest.raises(ConfigError, match=r"sharing\.bandwidth: .*less than or equal to 1.*got 2"):
        build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["sharing.bandwidth=2"]))


def _config(preset: str, *overrides: str):
    return build_config(apply_overrides(preset_dict(preset), list(overrides)))


def test_a_registered_selector_correction_or_algorithm_is_a_valid_config_value(register):
    """A new rule, correction or algorithm joins by registering: validation takes its name."""
    register(SELECTORS, "top-half", SelectionRule(SELECTORS["quantile"].build, by_bandwidth=True))
    config = _config("pursuit-ddqn", "sharing.select=top-half", "sharing.bandwidth=0.5")
    assert config.sharing.select == "top-half" and config.sharing.relays_by_bandwidth
    with pytest.raises(ConfigError, match=r"sharing\.select: Input should be 'quantile'.*, 'none' or 'top-half' \(got 'topk'\)"):
        _config("pursuit-ddqn", "sharing.select=topk")
    register(CORRECTIONS, "dps-again", CORRECTIONS["dps"])
    assert _config("halfcheetah-dase-td3", "sharing.correction=dps-again").sharing.correction == "dps-again"
    register(ALGORITHMS, "td3-again", ALGORITHMS["td3"])
    assert _config("halfcheetah-td3", "actor_critic.algo=td3-again").algorithm()[0] == "td3-again"


def test_an_algorithm_key_takes_the_algorithms_of_its_section_only():
    with pytest.raises(ConfigError, match=r"actor_critic\.algo: Input should be 'sac', 'td3' or 'ddpg' \(got 'sacc'\)"):
        _config("halfcheetah-td3", "actor_critic.algo=sacc")
    # an algorithm of another section is named with the section that takes it
    with pytest.raises(ConfigError, match=r"actor_critic\.algo: masac is configured in the centralised section, not in actor_critic: "
                       r"give centralised\.algo=masac \(centralised: \{algo: masac\}\) in place of the actor_critic section"):
        _config("halfcheetah-td3", "actor_critic.algo=masac")
    with pytest.raises(ConfigError, match=r"dqn\.algo: qmix is configured in the qmix section"):
        _config("pursuit-ddqn", "dqn.algo=qmix")
    with pytest.raises(ConfigError, match=r"policies\.blue\.kind: Input should be 'learning', .* or 'scripted' \(got 'frozn'\)"):
        _config("battle-ddqn", "policies.blue.kind=frozn")


def test_the_sharing_modes_an_algorithm_declares_are_the_ones_it_may_use(register):
    """A SUPER selection rule, and DASE's shared replay with DPS, need algorithms that declare them."""
    td3 = ALGORITHMS["td3"]
    register(ALGORITHMS, "td3-alone", replace(td3, capabilities=Capabilities(frozenset({"continuous"}))))
    register(ALGORITHMS, "td3-selecting", replace(td3, capabilities=Capabilities(frozenset({"continuous"}), select=True)))
    with pytest.raises(ConfigError, match="sharing.select=quantile applies to ddpg, dqn, maddpg, masac, matd3, sac, seac, td3, td3-selecting learners, not td3-alone"):
        _config("halfcheetah-td3", "actor_critic.algo=td3-alone", "sharing.select=quantile")
    assert _config("halfcheetah-td3", "actor_critic.algo=td3-selecting", "sharing.select=quantile").sharing.select == "quantile"
    with pytest.raises(ConfigError, match=r"replay=shared and correction=dps apply to actor-critic learners \(ddpg, sac, td3\), not td3-selecting"):
        _config("halfcheetah-dase-td3", "actor_critic.algo=td3-selecting")


@pytest.mark.parametrize("name", list(ENVS))
def test_an_env_name_takes_the_config_section_registered_beside_the_env(name):
    section = ENVS[name].section
    kind = section(name=name).action_kind() if section.actions == "any" else section.actions  # "any": its default settings decide
    learner = {} if kind == "discrete" else {"actor_critic": {}}
    assert type(build_config({"env": {"name": name}, **learner}).env) is ENVS[name].section


def test_a_run_learns_with_one_learner_section():
    """The sections algorithms register are exclusive: a run with two learners is refused
    before anything is built."""
    with pytest.raises(ConfigError, match=r"(qmix and actor_critic|actor_critic and qmix) are 2 learners: set one of them"):
        _config("halfcheetah-td3", "qmix={}")


def test_inconsistent_values_fail():
    with pytest.raises(ConfigError, match="parameter sharing"):
        build_config(apply_overrides(preset_dict("pursuit-paramshare"), ["sharing.select=quantile"]))
    with pytest.raises(ConfigError, match="sharing.team"):
        build_config(apply_overrides(preset_dict("pursuit-ddqn"), ["sharing.team=[0, 9]"]))


def test_malformed_override():
    with pytest.raises(ConfigError, match="not key=value"):
        apply_overrides({}, ["dqn.lr"])


def test_overrides_index_lists_and_the_budget_follows_the_rounds():
    data = preset_dict("pursuit-small-curriculum-super")
    config = build_config(apply_overrides(data, ["rounds.0.steps=1000"]))
    assert config.rounds[0].steps == 1000 and config.total_steps == sum(r.steps for r in config.rounds) != data["total_steps"]
    with pytest.raises(ConfigError, match=r"override 'rounds\.9\.steps': rounds is a list of 4: index it 0\.\.3"):
        apply_overrides(data, ["rounds.9.steps=1"])
    appended = build_config(apply_overrides(data, ["rounds.4.steps=500", "rounds.5={steps: 700, env: {n_evaders: 1}}"]))  # the length appends
    assert [r.steps for r in appended.rounds[4:]] == [500, 700] and appended.rounds[5].env == {"n_evaders": 1}
    assert appended.total_steps == sum(r["steps"] for r in data["rounds"]) + 1200
    with pytest.raises(ConfigError, match=r"override 'dqn\.lr\.x': dqn\.lr is a value, not a section"):
        apply_overrides(data, ["dqn.lr.x=1"])


def test_a_config_file_is_validated_after_the_command_lines_overrides(tmp_path, capsys):
    """A file that is incomplete alone (a Box-action env without its actor-critic section)
    takes the section from the command line."""
    from relayrl.cli import main

    (tmp_path / "pendulum.yaml").write_text("env: {name: Pendulum-v1}\n")
    assert main(["show", str(tmp_path / "pendulum.yaml"), "actor_critic={algo: td3}"]) == 0
    assert "algo: td3" in capsys.readouterr().out


def test_missing_pursuit_extra_names_the_extra(monkeypatch):
    from relayrl.envs.pursuit import make_pursuit

    monkeypatch.setitem(sys.modules, "pettingzoo.sisl", None)  # as if pymunk/sisl were not installed
    with pytest.raises(MissingExtraError, match=r"relayrl\[sisl\]"):
        make_pursuit()


def test_a_policy_of_another_algorithm_takes_that_algorithms_defaults_and_the_runs_own_settings():
    """A policy ``{on_policy: {algo: a2c}}`` on a PPO run trains A2C as A2C's defaults say (it
    once kept PPO's clip and 10 epochs), with the keys the run itself set; the same for a
    MATD3 policy on a MADDPG run."""
    env = {"name": "simple-tag", "num_envs": 2, "settings": {"continuous_actions": True}}
    run = build_config({"env": env, "on_policy": {"algo": "ppo", "rollout_length": 64}, "policies": {"agent": {"on_policy": {"algo": "a2c"}}}})
    a2c_run = build_config({"env": env, "on_policy": {"algo": "a2c", "rollout_length": 64}})
    algo, section, _ = run.recipe("agent")
    assert algo == "a2c" and section == a2c_run.recipe("")[1]
    assert (section.rollout_length, section.epochs, section.clip) == (64, 1, None)
    assert run.recipe("adversary")[1].clip == 0.2, "the run's own policies stay PPO"
    run = build_config({"env": env, "centralised": {"algo": "maddpg"}, "policies": {"agent": {"centralised": {"algo": "matd3"}}}})
    assert run.recipe("agent")[1] == build_config({"env": env, "centralised": {"algo": "matd3"}}).recipe("")[1]


def test_settings_their_learner_would_not_read_are_refused_and_a_recurrent_chunk_is_fitted():
    """chunk_length without a recurrent policy, alpha_lr with a fixed temperature: refused
    (they would do nothing); a recurrent PPO at its defaults (rollouts of 128, chunks of 10)
    is told a chunk length that divides its rollouts."""
    env = {"name": "simple-spread"}
    with pytest.raises(ConfigError, match=r"on_policy\.chunk_length is read by recurrent policies only: set on_policy\.recurrent=true"):
        build_config({"env": env, "on_policy": {"algo": "mappo", "chunk_length": 16}})
    with pytest.raises(ConfigError, match=r"on_policy\.rollout_length=128 is not a multiple of chunk_length=10.*a divisor of 128 \(e\.g\. 8\)"):
        build_config({"env": env, "on_policy": {"algo": "ppo", "recurrent": True}})
    assert build_config({"env": env, "on_policy": {"algo": "ppo", "recurrent": True, "chunk_length": 8}}).on_policy.chunk_length == 8
    with pytest.raises(ConfigError, match=r"centralised\.alpha_lr is the learnt temperature's, and auto_alpha=false fixes it"):
        build_config({"env": {"name": "simple-spread", "settings": {"continuous_actions": True}}, "centralised": {"algo": "masac", "auto_alpha": False, "alpha_lr": 1e-3}})
