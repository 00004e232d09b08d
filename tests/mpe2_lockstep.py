"""Test helper: one step of relayrl's particle games and of the same games in ``mpe2``, every
output compared (the checks of ``tests/envs/test_spread.py``, ``test_tag.py`` and
``test_reference.py``)."""

from typing import Any

import numpy as np


def step_both(ours: Any, references: list[Any], actions: list[np.ndarray]) -> tuple[list[dict[str, float]], np.ndarray]:
    """Steps ``ours`` (E games) with each group's ``actions [E, n, ...]`` and game e of
    ``references`` (mpe2 parallel envs, agents in the groups' order) with the same ones;
    asserts that observations, rewards, the state, truncations and terminations agree,
    and returns each reference's rewards and ours' episode ends."""
    steps, over = ours.step(actions)
    rewards_of_games = []
    for g, reference in enumerate(references):
        names = reference.possible_agents
        chosen = np.concatenate([np.asarray(a)[g] for a in actions])  # the agents in order, group after group
        obs, rewards, terminations, truncations, _ = reference.step({a: chosen[i] for i, a in enumerate(names)})
        first = 0
        for step in steps:
            group = names[first : first + step.reward.shape[1]]
            first += len(group)
            np.testing.assert_allclose(step.next_obs[g], np.stack([obs[a] for a in group]), rtol=0, atol=1e-5)
            np.testing.assert_allclose(step.reward[g], [rewards[a] for a in group], rtol=1e-6, atol=1e-5)
            np.testing.assert_allclose(step.next_state[g], reference.state(), rtol=0, atol=1e-5)
            assert step.truncated[g].tolist() == [truncations[a] for a in group]
            assert step.terminated[g].tolist() == [terminations[a] for a in group]
        rewards_of_games.append(rewards)
    return rewards_of_games, over
