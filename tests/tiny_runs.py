"""Overrides that turn a Pursuit preset into a run of seconds, for the command-line tests."""

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
