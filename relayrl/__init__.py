"""relayrl: multi-agent reinforcement learning in which learners share experience."""

__version__ = "0.1.0"
