"""Overrides that turn a Pursuit preset into a run of seconds, for the command-line tests, and
small learner sections under which each learner kind updates within a few hundred env steps."""

from relayrl.algos import ALGORITHMS

TINY_PURSUIT = [
    "total_steps=400",
    "dqn.learning_starts=100",
    "dqn.buffer_size=1000",
    "report_interval=200",
    "checkpoint_interval=200",
    "eval.interval=200",
    "eval.episodes=2",
    "env.settings.max_cycles=40",
]


def small_sections(algo: str) -> dict:
    """Small settings under which each learner kind updates within the run."""
    entry = ALGORITHMS[algo]
    if entry.capabilities.on_policy:
        return {entry.section: {"algo": algo, "rollout_length": 16, "hidden": [16], **({"critic_input": "state"} if algo == "mappo" else {})}}
    if entry.section == "centralised":
        return {entry.section: {"algo": algo, "random_steps": 60, "hidden": [16], "batch_size": 16, "buffer_size": 500, "fragment_length": 4, "updates_per_fragment": 1}}
    if entry.capabilities.centralised:
        return {entry.section: {"algo": algo, "max_episode_length": 12, "batch_size": 2, "buffer_size": 20, "target_update_episodes": 5}}
    if entry.section == "actor_critic":
        return {entry.section: {"algo": algo, "random_steps": 60, "hidden": [16], "batch_size": 16, "buffer_size": 500}}
    return {"model": {"hiddens": [16], "head_hidden": 16}, "dqn": {"algo": algo, "learning_starts": 60, "buffer_size": 500, "batch_size": 8}}
