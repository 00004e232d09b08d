"""Matches: which policy drives each entity slot of an env copy (paper 004, sections 3-4).

A match is one env copy's assignment, ``{group: slots}``: ``slots`` is a policy id for every
entity of the group, or a list with one entry per entity, where an entry is a policy id or
a bracketed list of ids (consecutive entities that form one worker). A run's match list is
repeated over its env copies (copy e plays ``matches[e % len(matches)]``; ``scale`` repeats).

Workers: in one copy, the slots a policy drives outside brackets form one worker, in the
order of the groups and slots; each bracket is a worker of its own. Every worker of a
policy has the same number of slots N_p, and position i of every worker, in every copy,
is the policy's agent i (its own parameter set for independent learners). So
``{"pursuer": "super"}`` is one worker of 8 agents per copy (SUPER's layout), and
``{"pursuer": [["p"]] * 8}`` makes eight single-entity workers of a one-agent policy.

Compiled once per vector env to index arrays: a policy's observations ``[W, N_p, ...]``
are gathered from the groups' ``[E, N_g, ...]`` arrays with one fancy index per group it
touches, and its actions scattered back the same way; a policy that drives a whole group
in order (the default match) reads and writes the group's arrays as they are.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from relayrl.core.errors import ConfigError
from relayrl.core.specs import GroupSpec

Match = dict[str, Any]  # {group: policy id | [policy id | [policy id, ...], ...]}


def default_match(groups: Sequence[str]) -> list[Match]:
    """Every group driven by the policy of its own name (one worker per copy)."""
    return [{name: name for name in groups}]


def match_policy_ids(matches: Sequence[Match]) -> list[str]:
    """The policy ids a match list names, in order of first appearance."""
    found: dict[str, None] = {}
    for match in matches:
        for slots in match.values():
            for item in [slots] if isinstance(slots, str) else slots:
                for pid in [item] if isinstance(item, str) else item:
                    found[pid] = None
    return list(found)


def returns_by_policy(returns: Sequence[np.ndarray], copies: Sequence[int], matches: Sequence[Match], groups: Sequence[str]) -> dict[str, list[float]]:
    """Per policy, the returns of the groups it drove alone (every entity of the group in
    that episode's copy): ``returns[i] [n_groups]`` of episode i, which ran in copy
    ``copies[i]`` under ``matches``."""
    found: dict[str, list[float]] = {}
    for episode, copy in zip(returns, copies):
        match = matches[int(copy) % len(matches)]
        for g, group in enumerate(groups):
            drivers = match_policy_ids([{group: match[group]}]) if group in match else []
            if len(drivers) == 1:
                found.setdefault(drivers[0], []).append(float(episode[g]))
    return found


def check_match_syntax(matches: Sequence[Any]) -> None:
    """Shapes only (the env's groups and sizes are checked when it is built)."""
    for m, match in enumerate(matches):
        if not isinstance(match, Mapping) or not match:
            raise ValueError(f"match[{m}] must map group names to policy ids, e.g. {{pursuer: learner}}; got {match!r}")
        for group, slots in match.items():
            items = [slots] if isinstance(slots, str) else slots
            ok = isinstance(items, list) and items and all(
                isinstance(i, str) or (isinstance(i, list) and i and all(isinstance(j, str) for j in i)) for i in items
            )
            if not ok:
                raise ValueError(
                    f"match[{m}].{group} must be a policy id or a list with one policy id (or a bracketed list of ids) "
                    f"per entity; got {slots!r}"
                )


@dataclass(frozen=True)
class Segment:
    """The slots of one policy in one group: entity ``(copy, entity)`` is worker ``worker``'s
    position ``position``; all ``[K]``."""

    group: int
    copy: np.ndarray
    entity: np.ndarray
    worker: np.ndarray
    position: np.ndarray


@dataclass(frozen=True)
class Assignment:
    """Where one policy acts: ``n_workers`` workers of ``spec.n_agents`` slots each."""

    policy: str
    spec: GroupSpec
    n_workers: int
    worker_copy: np.ndarray  # [W]: the env copy each worker acts in
    segments: tuple[Segment, ...]
    whole_group: int | None  # it drives every entity of this group in order, one worker per copy

    def gather(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """Per-group arrays ``[E, N_g, ...]`` -> this policy's ``[W, N_p, ...]``."""
        if self.whole_group is not None:
            return arrays[self.whole_group]
        first = arrays[self.segments[0].group]
        out = np.empty((self.n_workers, self.spec.n_agents, *first.shape[2:]), first.dtype)
        for s in self.segments:
            out[s.worker, s.position] = arrays[s.group][s.copy, s.entity]
        return out

    def scatter(self, values: np.ndarray, arrays: list[np.ndarray | None], sizes: Sequence[tuple[int, int]]) -> None:
        """Writes this policy's ``[W, N_p, ...]`` values into the per-group arrays (made on
        first use, ``sizes[g] = (E, N_g)``)."""
        if self.whole_group is not None:
            arrays[self.whole_group] = values
            return
        for s in self.segments:
            if arrays[s.group] is None:
                arrays[s.group] = np.empty((*sizes[s.group], *values.shape[2:]), values.dtype)
            arrays[s.group][s.copy, s.entity] = values[s.worker, s.position]


def _workers(match: Match, m: int, groups: Sequence[GroupSpec]) -> list[tuple[str, list[tuple[int, int]]]]:
    """One copy's workers: (policy id, [(group index, entity)]), in order of appearance."""
    index = {spec.name: g for g, spec in enumerate(groups)}
    unknown = sorted(set(match) - set(index))
    if unknown:
        raise ConfigError(f"match[{m}] names groups {unknown}; this environment's groups are {list(index)}")
    missing = [name for name in index if name not in match]
    if missing:
        raise ConfigError(f"match[{m}] leaves group(s) {missing} without a policy: give each of its entities a policy id")
    loose: dict[str, list[tuple[int, int]]] = {}
    brackets: list[tuple[str, list[tuple[int, int]]]] = []
    for name, g in index.items():
        slots, n = match[name], groups[g].n_agents
        items = [slots] * n if isinstance(slots, str) else slots
        width = sum(1 if isinstance(i, str) else len(i) for i in items)
        if width != n:
            raise ConfigError(f"match[{m}].{name} gives {width} slot(s) but group {name!r} has {n} entities ({', '.join(groups[g].agent_ids)})")
        entity = 0
        for item in items:
            if isinstance(item, str):
                loose.setdefault(item, []).append((g, entity))
                entity += 1
                continue
            if len(set(item)) != 1:
                raise ConfigError(f"match[{m}].{name}: a bracket is one worker of one policy; {item} names several")
            brackets.append((item[0], [(g, entity + k) for k in range(len(item))]))
            entity += len(item)
    return [*loose.items(), *brackets]


def _policy_spec(pid: str, slots: list[tuple[int, int]], groups: Sequence[GroupSpec]) -> GroupSpec:
    """The spaces of the slots a policy's worker drives (they must agree)."""
    specs = [groups[g] for g, _ in slots]
    first = specs[0]
    for spec in specs[1:]:
        same = replace(spec, name=first.name, agent_ids=first.agent_ids) == first
        if not same:
            raise ConfigError(
                f"policy {pid!r} drives groups {first.name!r} and {spec.name!r}, whose spaces differ "
                f"({first.obs_shape} {first.obs_dtype}, {first.n_actions or first.action_shape} actions vs "
                f"{spec.obs_shape} {spec.obs_dtype}, {spec.n_actions or spec.action_shape}): one policy acts in one kind of space"
            )
    if len(set(specs)) == 1 and len(slots) == first.n_agents and [e for _, e in slots] == list(range(first.n_agents)):
        return replace(first, name=pid)
    return replace(first, name=pid, agent_ids=tuple(groups[g].agent_ids[e] for g, e in slots))


def compile_matches(matches: Sequence[Match], groups: Sequence[GroupSpec], num_envs: int) -> dict[str, Assignment]:
    """Index arrays for every policy over ``num_envs`` copies (copy e plays
    ``matches[e % len(matches)]``), in order of first appearance."""
    workers: dict[str, list[tuple[int, list[tuple[int, int]]]]] = {}  # pid -> [(copy, slots)]
    per_match = [_workers(match, m, groups) for m, match in enumerate(matches)]
    for e in range(num_envs):
        for pid, slots in per_match[e % len(matches)]:
            workers.setdefault(pid, []).append((e, slots))
    compiled = {}
    for pid, found in workers.items():
        sizes = sorted({len(slots) for _, slots in found})
        if len(sizes) > 1:
            raise ConfigError(
                f"policy {pid!r} has workers of {' and '.join(map(str, sizes))} slots: every worker of a policy drives the "
                f"same number of entities (bracket its slots so that they do)"
            )
        spec = _policy_spec(pid, found[0][1], groups)
        for _, slots in found[1:]:
            _policy_spec(pid, [found[0][1][0], *slots], groups)
        rows = np.array([(e, g, entity, w, p) for w, (e, slots) in enumerate(found) for p, (g, entity) in enumerate(slots)])
        segments = tuple(
            Segment(int(g), *(np.ascontiguousarray(c) for c in rows[rows[:, 1] == g][:, [0, 2, 3, 4]].T))
            for g in np.unique(rows[:, 1])
        )
        whole = None
        if len(segments) == 1 and len(found) == num_envs:
            s, n = segments[0], groups[segments[0].group].n_agents
            in_order = np.array_equal(s.copy, s.worker) and np.array_equal(s.entity, s.position)
            if in_order and len(s.copy) == num_envs * n:
                whole = s.group
        compiled[pid] = Assignment(pid, spec, len(found), np.array([e for e, _ in found]), segments, whole)
    return compiled


def replace_group(matches: Sequence[Match], group: str, pid: str) -> list[Match]:
    """The match list with every entity of ``group`` driven by ``pid`` (a baseline in its place)."""
    return [{**match, group: pid} for match in matches]
