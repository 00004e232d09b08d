"""Rounds: a run as a list of stretches of training, each with its env step budget, its
env setting overrides and its matches (paper 004, sections 4.4 and 5; SPEC §2).

Between two rounds the run ends every episode in flight as a truncation (the last step
of the round gets ``truncated`` and ``over``, so n-step windows bootstrap, whole-episode
replays store the episode, recurrent carries reset), runs the ``on_round_end`` hooks with
the round's results, builds the next round's env and matches, runs ``on_round_start`` and
saves a checkpoint: a run stopped anywhere resumes inside the round it was in. The episodes
a round's end cut count in its results with their returns so far (``RoundResults.cut``), so
a round shorter than an episode still has results.

Hooks are callables named by import path (``package.module:function``), called with a
``RoundContext``: the round, its policies by id, and (at the end) its results.
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from relayrl.arena.match import Match, match_policy_ids, returns_by_policy
from relayrl.core.errors import HookError
from relayrl.core.strict import Strict
from relayrl.envs.episodes import EpisodeStats


class RoundConfig(Strict):
    steps: int = Field(ge=1, description="env steps of the round (it ends at the first fragment that reaches them)")
    env: dict[str, Any] = Field(default_factory=dict, description="env.settings keys that change for this round")
    match: list[dict[str, Any]] | None = Field(None, description="this round's matches (default: the run's)")
    name: str | None = Field(None, description="a label for tables and plots (default: its index)")


def load_hook(path: str) -> Callable[..., Any]:
    """The callable at ``package.module:function``; a clear error if there is none."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"hook {path!r} must name a callable as package.module:function")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"hook {path!r} cannot be loaded ({type(error).__name__}: {error}): install its module or fix the path") from None
    if not callable(found):
        raise ValueError(f"hook {path!r} names {type(found).__name__}, not a callable")
    return found


class HooksConfig(Strict):
    on_round_start: list[str] = Field(default_factory=list, description="package.module:function, called with a RoundContext")
    on_round_end: list[str] = Field(default_factory=list, description="package.module:function, called with a RoundContext")

    @field_validator("on_round_start", "on_round_end")
    @classmethod
    def _loadable(cls, paths: list[str]) -> list[str]:
        for path in paths:
            load_hook(path)
        return paths


@dataclass
class RoundResults:
    """What a round did: its episodes' returns per group (summed over the group's entities)
    and the env copy each episode ran in, under the round's ``matches``. The last ``cut`` of
    them were in flight at the round's end: their returns so far."""

    index: int
    start: int  # env step the round began at
    end: int  # and ended at
    returns: np.ndarray  # [episodes, n_groups]
    copies: np.ndarray  # [episodes]
    groups: list[str]
    matches: list[Match]
    cut: int = 0

    def mean_return(self, group: str) -> float:
        column = self.returns[:, self.groups.index(group)] if len(self.returns) else np.zeros(0)
        return float(column.mean()) if column.size else float("nan")

    def policy_returns(self) -> dict[str, np.ndarray]:
        """Per policy, the returns of the groups it drove alone (every entity of the group in
        that episode's copy), episode by episode."""
        found = returns_by_policy(self.returns, self.copies, self.matches, self.groups)
        return {pid: np.array(values) for pid, values in found.items()}

    def games(self, first: str, second: str) -> list[tuple[str, str, float, float]]:
        """The episodes that pitted one policy driving all of group ``first`` against one
        driving all of ``second``: (its id, the other's id, their returns), in the order
        the episodes ended."""
        a, b = self.groups.index(first), self.groups.index(second)
        found = []
        for returns, copy in zip(self.returns, self.copies):
            match = self.matches[int(copy) % len(self.matches)]
            sides = [match_policy_ids([{g: match[g]}]) if g in match else [] for g in (first, second)]
            if all(len(side) == 1 for side in sides):
                found.append((sides[0][0], sides[1][0], float(returns[a]), float(returns[b])))
        return found


@dataclass
class RoundContext:
    """What hooks see and may change: the policies by id (their learners, networks and
    optimisers), the round's config, and its results once it ended."""

    index: int
    round: RoundConfig
    policies: dict[str, Any]
    env_steps: int
    results: RoundResults | None = None


def round_ends(rounds: list[RoundConfig]) -> list[int]:
    """The env step at which each round's budget is spent."""
    return list(np.cumsum([r.steps for r in rounds]).tolist())


def end_episodes(fragment: dict[str, np.ndarray]) -> None:
    """Ends every episode in flight at the fragment's last step as a truncation, in place:
    ``over`` for every worker, ``truncated`` for every entity in the episode that neither
    terminated nor truncated there."""
    last = {name: fragment[name][-1] for name in ("valid", "terminated", "truncated", "over")}
    running = ~last["over"]
    last["truncated"] |= running[:, None] & last["valid"] & ~last["terminated"]
    last["over"][:] = True


def _text_table(rows: list[dict[str, Any]], title: str) -> str:
    """Rows of one set of keys as a plain-text table for the progress display."""
    if not rows:
        return f"{title}: no rows"
    keys = list(rows[0])
    cells = [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()] for row in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = [title, "  ".join(k.rjust(w) for k, w in zip(keys, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


class RoundSchedule:
    """A run's rounds: where each ends, the episodes of the one in progress, and the schemes
    and hooks that run at their starts and ends. ``write_table(name, rows)`` keeps each
    scheme's table after every round (the run directory's ``<name>.csv``); ``verbose``
    prints the rounds' progress and tables."""

    def __init__(
        self, rounds: list[RoundConfig], hooks: HooksConfig, schemes: list[Any], write_table: Callable[[str, list[dict[str, Any]]], None] | None, verbose: bool
    ) -> None:
        self.rounds = rounds
        self.ends = round_ends(rounds)
        self.hooks = {when: [(path, load_hook(path)) for path in getattr(hooks, when)] for when in ("on_round_start", "on_round_end")}
        self.schemes = schemes
        self.write_table = write_table
        self.verbose = verbose
        self.returns: list[np.ndarray] = []  # the current round's episodes, [n_groups] each
        self.copies: list[int] = []  # and the env copy each ran in
        self.cut = 0  # of them, the episodes the round's end cut (recorded and reported in one iteration)

    def __bool__(self) -> bool:
        return bool(self.rounds)

    def record(self, index: int, env_steps: int, fragments: dict[str, dict[str, np.ndarray]], episodes: EpisodeStats, cut: Callable[[], EpisodeStats]) -> None:
        """A fragment that ended at ``env_steps``: its finished episodes count. Where it
        reaches round ``index``'s end, its episodes in flight end with it (``end_episodes``)
        and count too, with the returns ``cut()`` gives (the env copies' returns so far)."""
        if not self.rounds:
            return
        self.returns += episodes.returns
        self.copies += episodes.copies
        if env_steps >= self.ends[index]:
            for fragment in fragments.values():
                end_episodes(fragment)
            in_flight = cut()
            self.returns += in_flight.returns
            self.copies += in_flight.copies
            self.cut = len(in_flight.returns)

    def end(self, index: int, env_steps: int, policies: dict[str, Any], groups: list[str], matches: list[Match]) -> None:
        """Round ``index`` ended at ``env_steps``: its results go to the schemes, then to the
        ``on_round_end`` hooks."""
        start = self.ends[index - 1] if index else 0
        returns = np.array(self.returns).reshape(-1, len(groups))
        results = RoundResults(index, start, env_steps, returns, np.array(self.copies, np.int64), groups, matches, self.cut)
        context = RoundContext(index, self.rounds[index], policies, env_steps, results)
        if self.verbose:
            means = ", ".join(f"{name} {results.mean_return(name):.2f}" for name in groups)
            cut = f" ({self.cut} of them cut by the round's end: their returns so far)" if self.cut else ""
            print(f"round {index + 1}/{len(self.rounds)} ended at env step {env_steps:,}: {len(returns)} episodes{cut}, mean return {means}")
        for scheme in self.schemes:
            scheme.on_round_end(context)
            if self.write_table is not None:
                self.write_table(scheme.name, scheme.rows)
            if self.verbose:
                # the title names the round (counted from 1); the rows' own round index is the CSV's
                shown = [{k: v for k, v in r.items() if k != "round"} for r in scheme.rows if r["round"] == index]
                print(_text_table(shown, f"{scheme.name}, round {index + 1}"))
        self._call_hooks("on_round_end", context)
        self.returns, self.copies, self.cut = [], [], 0

    def begin(self, index: int, env_steps: int, policies: dict[str, Any], matches: list[Match]) -> None:
        """Round ``index`` starts: announced, then its schemes' and hooks' ``on_round_start``."""
        if self.verbose:
            r = self.rounds[index]
            changes = ", ".join(f"{k}={v}" for k, v in r.env.items()) or "the run's env"
            shown = "; ".join(", ".join(f"{g}: {ids}" for g, ids in m.items()) for m in matches[:4])
            more = f" (+{len(matches) - 4} more)" if len(matches) > 4 else ""
            print(f"round {index + 1}/{len(self.rounds)}{f' {r.name}' if r.name else ''} from env step {env_steps:,}: {changes}; matches {shown}{more}")
        context = RoundContext(index, self.rounds[index], policies, env_steps)
        for scheme in self.schemes:
            scheme.on_round_start(context)
        self._call_hooks("on_round_start", context)

    def _call_hooks(self, when: str, context: "RoundContext") -> None:
        """Each ``when`` hook with the round's context; one that raises stops the run with
        its path, the round and what it raised."""
        for path, hook in self.hooks[when]:
            try:
                hook(context)
            except Exception as error:
                raise HookError(f"hook {path} ({when}) of round {context.index + 1}/{len(self.rounds)} raised {type(error).__name__}: {error}") from error

    def state_dict(self) -> dict[str, Any]:
        return {
            "round_returns": [r.tolist() for r in self.returns],
            "round_copies": self.copies,
            "schemes": {scheme.name: scheme.state_dict() for scheme in self.schemes},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.returns = [np.array(r) for r in state["round_returns"]]
        self.copies = list(state["round_copies"])
        for scheme in self.schemes:
            scheme.load_state_dict(state["schemes"][scheme.name])
