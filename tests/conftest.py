import os

import pytest
import torch

# Tests run on CPU with one intra-op thread (what the learner uses on small machines).
torch.set_num_threads(1)
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


@pytest.fixture
def register():
    """``register(registry, name, entry)`` adds an entry for one test, removed afterwards."""
    added = []

    def add(registry, name, entry):
        registry.add(name, entry)
        added.append((registry, name))

    yield add
    for registry, name in reversed(added):
        registry.remove(name)
