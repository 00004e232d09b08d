"""Small real pieces for the component tests: corridor copies, and learners of a registered
algorithm on them (the same builders a run uses)."""

import torch

from relayrl.algos.sections import DQNConfig
from relayrl.algos.off_policy import make_learner
from relayrl.arena.collect import Venue
from relayrl.arena.match import default_match
from relayrl.core.profiler import SectionTimer
from relayrl.envs import make_env_factory, make_vector_env
from relayrl.nets.model_config import ModelConfig
from relayrl.sharing.config import SharingConfig

CORRIDOR = {"n_agents": 3, "length": 4, "max_steps": 10}


def venue(copies: int = 2, matches: list | None = None) -> Venue:
    factory = make_env_factory("corridor", CORRIDOR)
    venv = make_vector_env(factory, copies)
    return Venue(None, factory, venv, matches or default_match([g.name for g in venv.groups]))


def learner(spec, seed: int = 0, **sharing):
    """A DQN learner of ``spec``'s agents (learning from step 20), sharing as given."""
    section = DQNConfig(learning_starts=20, buffer_size=200, batch_size=4, fragment_length=4)
    return make_learner(spec, "dqn", section, SharingConfig(**sharing), torch.device("cpu"), [seed, seed + 1, seed + 2, seed + 3],
                        SectionTimer(), model=ModelConfig(hiddens=[8], head_hidden=8))
