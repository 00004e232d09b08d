"""The built-in algorithms: each registered with its config section and what it supports,
its code named by import path (``relayrl.core.registry.Lazy``), so that validating a config
or listing the algorithms imports no network code. A user's algorithm registers the same
way, from its own module: ``ALGORITHMS.add(name, AlgorithmEntry(make, fields, section,
capabilities))``; one registered again under a new name (``ALGORITHMS["td3"]``) keeps its
``base`` and trains as the built-in it copies."""

from dataclasses import replace
from typing import Any

from relayrl.algos.algorithm import ALGORITHMS, AlgorithmEntry, Capabilities
from relayrl.core.registry import Lazy
from relayrl.core.specs import GroupSpec

# DQN's targets do not depend on the behaviour policy: there is nothing for DPS to correct
# on a shared replay (docs/results/dase/README.md)
DQN = Capabilities(frozenset({"discrete"}), param_sharing=True, select=True, relay_between=True, network_factory=True, scaled_exploration=True)
# TD3, DDPG and deterministic SAC: each agent keeps parameters of its own, and DPS weighs
# shared transitions by how close their deterministic actions are (paper 001)
ACTOR_CRITIC = Capabilities(frozenset({"continuous"}), select=True, shared_replay=True, relay_between=True, shared_replay_between=True)
# whole episodes of the group's agents trained together: no agent's own transitions to
# select, relay or share
QMIX = Capabilities(frozenset({"discrete"}), recurrent=True, centralised=True, group_acting=True, reads_state=True, param_sharing=True,
                    scaled_exploration=True)


def builtin(name: str, entry: AlgorithmEntry) -> None:
    """Registers a built-in algorithm as its own base (``AlgorithmEntry.base``)."""
    ALGORITHMS.add(name, replace(entry, base=name))


def no_transition_fields(spec: GroupSpec) -> dict[str, Any]:
    """``fields`` describes transition rows, which the episode and rollout learners do not store."""
    return {}


# in this order, messages list the algorithms of a section
builtin("dqn", AlgorithmEntry(Lazy("relayrl.algos.dqn:make_dqn"), Lazy("relayrl.algos.dqn:dqn_fields"), "dqn", DQN))
builtin(
    "qmix",
    AlgorithmEntry(
        Lazy("relayrl.algos.qmix:make_qmix"),
        no_transition_fields,
        "qmix",
        QMIX,
        learner=Lazy("relayrl.algos.episode_learner:EpisodeLearner"),
        plan=Lazy("relayrl.algos.qmix:qmix_plan"),
    ),
)
continuous_fields = Lazy("relayrl.algos.actor_critic:continuous_fields")
builtin("sac", AlgorithmEntry(Lazy("relayrl.algos.sac_deterministic:make_sac"), continuous_fields, "actor_critic", ACTOR_CRITIC))
builtin("td3", AlgorithmEntry(Lazy("relayrl.algos.td3:make_td3"), continuous_fields, "actor_critic", ACTOR_CRITIC))
builtin("ddpg", AlgorithmEntry(Lazy("relayrl.algos.td3:make_td3"), continuous_fields, "actor_critic", ACTOR_CRITIC))

# policy gradients on rollouts (``relayrl.algos.on_policy``): discrete and Box actions, one
# parameter set per agent or shared; MAPPO's critic reads the env's state; SEAC's agents
# learn from each other's steps, picked by a selection rule (a network per agent)
ON_POLICY = Capabilities(frozenset({"discrete", "continuous"}), on_policy=True, param_sharing=True)
on_policy_learner, rollout_plan = Lazy("relayrl.algos.on_policy:OnPolicyLearner"), Lazy("relayrl.algos.on_policy:rollout_plan")
make_policy_gradient = Lazy("relayrl.algos.policy_gradient:make_policy_gradient")
for name, capabilities in (("ppo", ON_POLICY), ("mappo", replace(ON_POLICY, reads_state=True)), ("a2c", ON_POLICY)):
    builtin(name, AlgorithmEntry(make_policy_gradient, no_transition_fields, "on_policy", capabilities, on_policy_learner, rollout_plan))
SEAC = Capabilities(frozenset({"discrete", "continuous"}), on_policy=True, select=True)
builtin("seac", AlgorithmEntry(Lazy("relayrl.algos.seac:make_seac"), no_transition_fields, "on_policy", SEAC, on_policy_learner, rollout_plan))

# centralised critics on joint transitions (``relayrl.algos.centralised``): every agent's
# critic sees the group's observations and actions, so teammates share one replay and
# relaying transitions to each other does not apply; a team selects joint rows for the
# other teams of relay.between; MATD3's target smoothing is for Box actions
CENTRALISED = Capabilities(frozenset({"discrete", "continuous"}), centralised=True, param_sharing=True, select=True, relay_between=True)
centralised_learner, joint_plan = Lazy("relayrl.algos.centralised:CentralisedLearner"), Lazy("relayrl.algos.centralised:joint_plan")
for name, make, capabilities in (
    ("maddpg", Lazy("relayrl.algos.maddpg:make_maddpg"), CENTRALISED),
    ("matd3", Lazy("relayrl.algos.maddpg:make_maddpg"), replace(CENTRALISED, actions=frozenset({"continuous"}))),
    ("masac", Lazy("relayrl.algos.masac:make_masac"), CENTRALISED),
):
    builtin(name, AlgorithmEntry(make, Lazy("relayrl.algos.joint_critics:joint_fields"), "centralised", capabilities, centralised_learner, joint_plan))
