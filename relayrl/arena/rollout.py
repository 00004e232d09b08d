"""The one env loop, for training and for evaluation (DESIGN.md §4).

A rollout steps E env copies, each entity acting through the policy its match gives it
(``relayrl.arena.match``) under the env's action masks, keeps every policy's recurrent
carry (rows reset to zeros where an entity's episode ends: it terminated or truncated, or
its copy's episode is over) and hands back per-policy fragments ``[T, W, N_p, ...]``, with
the global state ``[T, W, S]`` and action masks ``[T, W, N_p, A]`` where the env gives
them. Evaluation runs the same steps until every entity has finished one episode.
"""

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from relayrl.arena.match import Assignment, Match, compile_matches
from relayrl.arena.policy import Policy
from relayrl.core.errors import EnvError, NonFiniteError
from relayrl.core.profiler import SectionTimer
from relayrl.core.specs import GroupSpec
from relayrl.envs.types import GroupObs, GroupStep
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


def env_check(groups: list[GroupSpec], first_copy: int = 0) -> Callable[[int, GroupStep, int | None], None]:
    """A rollout's ``check``: NaN or inf from the environment is caught before it is stored
    or learned from, and an action mask that allows an entity of the episode no action
    before it acts, each naming the agent, its group, its env copy (copies counted from
    ``first_copy``, where a runner steps a slice of the run's copies) and the env step."""

    def check(g: int, step: GroupStep, env_steps: int | None) -> None:
        spec, when = groups[g], "in an evaluation" if env_steps is None else f"at env step {env_steps:,}"
        found = step.non_finite()
        if found is not None:
            field_name, (e, i), value = found
            raise NonFiniteError(
                f"the environment returned a non-finite {field_name} ({value}) for agent {spec.agent_ids[i]!r} "
                f"of group {spec.name!r} in env copy {first_copy + e}"
            )
        for state in (step.state, step.next_state) if g == 0 else ():  # one state for every group: checked once
            if state is not None and not np.isfinite(state).all():
                e = int(np.argwhere(~np.isfinite(state.reshape(len(state), -1)).all(-1))[0, 0])
                flat = state[e].reshape(-1)
                raise NonFiniteError(f"the environment returned a non-finite global state ({flat[~np.isfinite(flat)][0]}, its state()) in env copy {first_copy + e}")
        mask = step.action_mask
        if mask is not None:
            stuck = step.alive & ~mask.any(-1)
            if stuck.any():
                e, i = np.argwhere(stuck)[0]
                raise EnvError(
                    f"the environment's action mask allows agent {spec.agent_ids[i]!r} of group {spec.name!r} in env copy "
                    f"{first_copy + e} no action {when}: an agent in the episode must have at least one allowed action "
                    f"(mark it done, or allow a no-op)"
                )

    return check


class Rollout:
    """``policies`` by id act for the slots ``matches`` give them over ``venv``'s copies.
    ``check(g, step)`` sees every group's step before it is used (the run's guard
    against non-finite env outputs)."""

    def __init__(
        self,
        venv: VectorEnv,
        policies: dict[str, Policy],
        matches: list[Match],
        timer: SectionTimer | None = None,
        check: Callable[[int, GroupStep, int | None], None] | None = None,
    ) -> None:
        self.venv = venv
        self.policies = policies
        self.assignments = compile_matches(matches, venv.groups, venv.num_envs)
        self.sizes = [(venv.num_envs, spec.n_agents) for spec in venv.groups]
        self.timer = timer
        self.check = check
        self.observed: list[GroupObs] | None = None  # what the entities act on next, per group
        self.carry: dict[str, Any] = dict.fromkeys(self.assignments)

    def _section(self, name: str) -> Any:
        return self.timer(name) if self.timer is not None else nullcontext()

    def reset(self, seed: int) -> None:
        self.observed = self.venv.reset(seed)
        self.carry = dict.fromkeys(self.assignments)

    def _masks(self, masks: list[np.ndarray | None]) -> list[np.ndarray] | None:
        """Per-group action masks (all actions allowed in groups the env does not mask);
        None where no group is masked."""
        if all(m is None for m in masks):
            return None
        return [np.ones((*size, spec.n_actions), bool) if m is None else m for m, size, spec in zip(masks, self.sizes, self.venv.groups)]

    @staticmethod
    def _state(where: Assignment, state: np.ndarray | None) -> np.ndarray | None:
        """The global state ``[E, S]`` for each of a policy's workers, ``[W, S]``."""
        return None if state is None else state[where.worker_copy]

    def step(self, env_steps: int | None) -> tuple[dict[str, dict[str, np.ndarray | None]], dict[str, np.ndarray], list[GroupStep], np.ndarray]:
        """One step of every copy: what each policy acted on (``obs``, ``alive``, ``state``,
        ``action_mask``) and its actions ``[W, N_p, ...]``, the env's per-group steps and
        ``over [E]``."""
        assert self.observed is not None, "reset the rollout first"
        masks = self._masks([o.action_mask for o in self.observed])
        state = self.observed[0].state
        seen, acted, group_actions = {}, {}, [None] * len(self.sizes)
        with self._section("act"):
            for pid, where in self.assignments.items():
                mask = None if masks is None else where.gather(masks)
                obs = where.gather([o.obs for o in self.observed])
                seen[pid] = {"obs": obs, "valid": where.gather([o.alive for o in self.observed]), "state": self._state(where, state), "action_mask": mask}
                acted[pid], self.carry[pid] = self.policies[pid].act(obs, self.carry[pid], env_steps, mask)
                where.scatter(acted[pid], group_actions, self.sizes)
        with self._section("env"):
            result, over = self.venv.step(group_actions)
        for g, step in enumerate(result):
            if self.check is not None:
                self.check(g, step, env_steps)
        if any(c is not None for c in self.carry.values()):
            ended = [step.terminated | step.truncated | over[:, None] for step in result]
            self.carry = {pid: reset_carry(c, self.assignments[pid].gather(ended)) for pid, c in self.carry.items()}
        self.observed = [step.observed() for step in result]
        return seen, acted, result, over

    def collect(self, n_steps: int, env_steps: int) -> dict[str, dict[str, np.ndarray]]:
        """``n_steps`` steps of every copy; per policy the fields of ``relayrl.algos.nstep.STEP_FIELDS``,
        ``[T, W, N_p, ...]`` (``valid``: the entity was in the episode when it acted), ``over
        [T, W]`` (the worker's env copy finished its episode with that step), and
        ``state``/``next_state`` ``[T, W, S]`` and ``action_mask``/``next_action_mask``
        ``[T, W, N_p, A]`` where the env gives them."""
        steps: dict[str, dict[str, list[np.ndarray]]] = {pid: {} for pid in self.assignments}
        for _ in range(n_steps):
            seen, acted, result, over = self.step(env_steps)
            next_masks = self._masks([s.next_action_mask for s in result])
            next_state = result[0].next_state
            for pid, where in self.assignments.items():
                fields = {
                    **seen[pid],
                    "action": acted[pid],
                    "reward": where.gather([s.reward for s in result]),
                    "next_obs": where.gather([s.next_obs for s in result]),
                    "terminated": where.gather([s.terminated for s in result]),
                    "truncated": where.gather([s.truncated for s in result]),
                    "next_state": self._state(where, next_state),
                    "next_action_mask": None if next_masks is None else where.gather(next_masks),
                    "over": over[where.worker_copy],  # [W]: the worker's env copy finished its episode
                }
                for name, value in fields.items():
                    if value is not None:
                        steps[pid].setdefault(name, []).append(value)
        return {pid: {k: np.stack(v) for k, v in fields.items()} for pid, fields in steps.items()}

    def episodes(self, seed: int, max_steps: int | None = None, env_steps: int | None = None) -> tuple[np.ndarray, int]:
        """From a reset with ``seed``, steps (acting greedily; with ``env_steps``, as training
        acts at that step: sampled actions, DQN's epsilon then) until every episode
        has finished once, or ``max_steps`` steps have passed (an env without a time limit);
        copies that finish early keep stepping, so the batch stays one array. Returns each
        episode's return (so far, where cut): per copy, each group's reward summed over its
        entities ``[E, n_groups]``; where entities run episodes of their own
        (``venv.independent_episodes``: K copies of a single-agent env), per entity
        ``[E * N, 1]``; and how many episodes ``max_steps`` cut."""
        self.reset(seed)
        assert self.observed is not None
        per_entity = self.venv.independent_episodes
        shape = self.sizes[0] if per_entity else (self.venv.num_envs, len(self.sizes))
        returns, running = np.zeros(shape), np.ones(shape, bool)
        steps = 0
        while running.any() and (max_steps is None or steps < max_steps):
            steps += 1
            _, _, result, over = self.step(env_steps)
            if per_entity:
                (step,) = result
                returns += np.where(running, step.reward, 0.0)
                running &= ~(step.terminated | step.truncated)
            else:
                returns += np.where(running, np.stack([s.reward.sum(axis=1) for s in result], axis=1), 0.0)
                running &= ~over[:, None]
        cut = int(running.sum()) if per_entity else int(running[:, 0].sum())
        return (returns.reshape(-1, 1) if per_entity else returns), cut
