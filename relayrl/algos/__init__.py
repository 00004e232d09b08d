"""Learners with an agent axis: act, td_error and update for all agents in one call."""

from relayrl.algos.dqn import DQNLearner, DQNSettings
from relayrl.algos.schedules import linear_schedule

__all__ = ["DQNLearner", "DQNSettings", "linear_schedule"]
