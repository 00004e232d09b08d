"""The one env loop, for training and for evaluation (DESIGN.md §4).

A rollout steps E env copies with the policy that drives each group, keeps every
entity's recurrent carry (reset to zeros where the entity's episode ends: it terminated
or truncated, or its copy's episode is over) and hands back per-group fragments
``[T, E, N, ...]``. Evaluation runs the same steps until every entity has finished one
episode.
"""

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from relayrl.algos.nstep import STEP_FIELDS
from relayrl.arena.policy import Policy
from relayrl.core.profiler import SectionTimer
from relayrl.envs.pettingzoo_adapter import GroupStep
from relayrl.envs.vector_env import VectorEnv


def reset_carry(carry: Any, ended: np.ndarray) -> Any:
    """``carry`` with the rows of entities whose episode ended (``ended [E, N]``) zeroed: a
    tensor or array ``[E, N, ...]``, a tuple or dict of them, or None (no recurrence)."""
    if carry is None or not ended.any():
        return carry
    if isinstance(carry, tuple):
        return tuple(reset_carry(c, ended) for c in carry)
    if isinstance(carry, dict):
        return {k: reset_carry(c, ended) for k, c in carry.items()}
    keep = ended.reshape(*ended.shape, *[1] * (carry.ndim - ended.ndim)) == 0
    if isinstance(carry, torch.Tensor):
        return carry * torch.as_tensor(keep, device=carry.device, dtype=carry.dtype)
    return carry * keep.astype(carry.dtype)


class Rollout:
    """``policies[g]`` drives group g of ``venv``. ``check(g, step)`` sees every step before
    it is used (the trainer's guard against non-finite env outputs)."""

    def __init__(
        self,
        venv: VectorEnv,
        policies: list[Policy],
        timer: SectionTimer | None = None,
        check: Callable[[int, GroupStep], None] | None = None,
    ) -> None:
        self.venv = venv
        self.policies = policies
        self.timer = timer
        self.check = check
        self.obs: list[np.ndarray] | None = None
        self.alive: list[np.ndarray] | None = None
        self.carry: list[Any] = [None] * len(policies)

    def _section(self, name: str) -> Any:
        return self.timer(name) if self.timer is not None else nullcontext()

    def reset(self, seed: int) -> None:
        self.obs, self.alive = self.venv.reset(seed)
        self.carry = [None] * len(self.policies)

    def step(self, env_steps: int | None) -> tuple[list[np.ndarray], list[GroupStep], np.ndarray]:
        """One step of every copy: actions per group, the env's steps and ``over [E]``."""
        assert self.obs is not None, "reset the rollout first"
        with self._section("act"):
            acted = [policy.act(obs, carry, env_steps) for policy, obs, carry in zip(self.policies, self.obs, self.carry)]
        actions = [a for a, _ in acted]
        with self._section("env"):
            result, over = self.venv.step(actions)
        for g, step in enumerate(result):
            if self.check is not None:
                self.check(g, step)
        self.carry = [
            reset_carry(carry, step.terminated | step.truncated | over[:, None]) for (_, carry), step in zip(acted, result)
        ]
        return actions, result, over

    def collect(self, n_steps: int, env_steps: int) -> list[dict[str, np.ndarray]]:
        """``n_steps`` steps of every copy; per group the fields of ``STEP_FIELDS``,
        ``[T, E, N, ...]`` (``valid``: the entity was in the episode when it acted)."""
        steps: list[dict[str, list[np.ndarray]]] = [{f: [] for f in STEP_FIELDS} for _ in self.policies]
        for _ in range(n_steps):
            obs, alive = self.obs, self.alive
            actions, result, _ = self.step(env_steps)
            for g, step in enumerate(result):
                fields = (
                    ("obs", obs[g]),
                    ("action", actions[g]),
                    ("reward", step.reward),
                    ("next_obs", step.next_obs),
                    ("terminated", step.terminated),
                    ("truncated", step.truncated),
                    ("valid", alive[g]),
                )
                for name, value in fields:
                    steps[g][name].append(value)
            self.obs, self.alive = [s.obs for s in result], [s.alive for s in result]
        return [{k: np.stack(v) for k, v in group.items()} for group in steps]

    def episodes(self, seed: int) -> np.ndarray:
        """From a reset with ``seed``, steps (acting as in evaluation) until every episode
        has finished once; copies that finish early keep stepping, so the batch stays one
        array. Returns each episode's return: per copy, each group's reward summed over its
        entities ``[E, n_groups]``; where entities run episodes of their own
        (``venv.independent_episodes``: K copies of a single-agent env), per entity
        ``[E * N, 1]``."""
        self.reset(seed)
        assert self.obs is not None
        per_entity = self.venv.independent_episodes
        shape = self.obs[0].shape[:2] if per_entity else (self.venv.num_envs, len(self.policies))
        returns, running = np.zeros(shape), np.ones(shape, bool)
        while running.any():
            _, result, over = self.step(None)
            if per_entity:
                (step,) = result
                returns += np.where(running, step.reward, 0.0)
                running &= ~(step.terminated | step.truncated)
            else:
                returns += np.where(running, np.stack([s.reward.sum(axis=1) for s in result], axis=1), 0.0)
                running &= ~over[:, None]
            self.obs, self.alive = [s.obs for s in result], [s.alive for s in result]
        return returns.reshape(-1, 1) if per_entity else returns
