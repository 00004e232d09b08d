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


@pytest.fixture
def unload_plugins():
    """``unload_plugins()`` withdraws what test modules (``testenvs.*``) registered in the
    registries and forgets those modules, as a fresh process would be; it runs again after
    the test."""
    import sys

    from relayrl.core.registry import REGISTRIES

    def unload():
        for registry in REGISTRIES:
            for name in [n for n in registry if registry.origin(n).startswith("testenvs.")]:
                sys.modules.pop(registry.origin(name), None)
                registry.remove(name)

    unload()
    yield unload
    unload()
