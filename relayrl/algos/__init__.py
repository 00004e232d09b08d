"""Algorithms with an agent axis (act, td_error and update for all agents in one call) and
the learners that feed them. Importing the package registers every built-in algorithm
(``relayrl.algos.catalog``) without importing their networks."""

from relayrl.algos import catalog  # noqa: F401  (registration)
from relayrl.algos.algorithm import ALGORITHMS, Algorithm, AlgorithmEntry, Capabilities, OffPolicyParams

__all__ = ["ALGORITHMS", "Algorithm", "AlgorithmEntry", "Capabilities", "OffPolicyParams"]
