"""Finished episodes, as every vector env reports them (a leaf module: the built-in vector
envs and the generic ones import it without importing each other)."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class EpisodeStats:
    """Finished episodes since the last drain: per-group returns summed over the group's
    agents and the env copy each ran in (what a round's results attribute to the policies
    of that copy's match). Envs whose agents have episodes of their own (K copies of one
    single-agent env) also list the agent each episode belongs to."""

    returns: list[np.ndarray] = field(default_factory=list)  # each [n_groups]
    lengths: list[int] = field(default_factory=list)
    agents: list[int] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)
