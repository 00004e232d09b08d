"""PettingZoo SISL Pursuit with the SUPER paper's settings (paper 000, Table 2; SPEC §3)."""

from typing import Any

from pettingzoo.utils.env import ParallelEnv

from relayrl.core.errors import MissingExtraError

# Paper 000, Appendix E Table 2. PettingZoo's default shared_reward=True differs: the
# paper trains on individual rewards.
PAPER_SETTINGS: dict[str, Any] = {
    "x_size": 16,
    "y_size": 16,
    "n_evaders": 30,
    "n_pursuers": 8,
    "obs_range": 7,
    "n_catch": 2,
    "freeze_evaders": False,
    "tag_reward": 0.01,
    "catch_reward": 5.0,
    "urgency_reward": -0.1,
    "surround": True,
    "max_cycles": 500,
    "shared_reward": False,
    "constraint_window": 1.0,
}


def make_pursuit(**settings: Any) -> ParallelEnv:
    """A pursuit_v5 parallel env; ``settings`` override PAPER_SETTINGS key by key."""
    try:
        from pettingzoo.sisl import pursuit_v5
    except ImportError as error:  # pymunk / pygame come with the sisl extra
        raise MissingExtraError("pettingzoo[sisl]", "sisl") from error
    unknown = set(settings) - set(PAPER_SETTINGS)
    if unknown:
        raise ValueError(f"unknown pursuit settings {sorted(unknown)}; allowed: {sorted(PAPER_SETTINGS)}")
    return pursuit_v5.parallel_env(**{**PAPER_SETTINGS, **settings})
