"""The run's metric rows (DESIGN.md §6): what happened between two reports, from the
episodes the collector finished and every learner's own report (``Learner.report``, a dict
by metric name), written to ``metrics.csv`` and TensorBoard, and shown as a progress line.

One policy on one group reports that learner's own columns beside the standard ones;
several groups or policies report each group's reward, each learner's loss and the
exchanges' columns (``relayrl.sharing.exchange``); several learning policies also report
each one's training reward (``policy_reward_mean/<id>``: the returns of the groups it drove
alone, as a round's results count them), the curves of a population's members.
"""

import math
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from relayrl.arena.match import returns_by_policy
from relayrl.experiment.metrics import MetricsWriter


@dataclass
class Tally:
    """Accumulators between two metric reports."""

    env_steps: int = 0
    episode_returns: list[np.ndarray] = field(default_factory=list)  # each [n_groups]: summed over a group
    episode_lengths: list[int] = field(default_factory=list)
    seconds: float = 0.0
    policy_returns: dict[str, list[float]] = field(default_factory=dict)  # by learning policy


@dataclass(frozen=True)
class ReportLayout:
    """What a run's rows hold: its groups (the ``reported`` one is the run's figure), its
    learners by policy id (``main``: the one whose updates, loss and exploration are the
    standard columns), that learner's own columns, the exchanges' columns, and whether the
    run has rounds."""

    groups: list[str]
    reported: int
    learners: list[str]
    main: str
    main_columns: tuple[str, ...]
    exchange_columns: tuple[str, ...]
    one_policy: bool
    rounds: bool

    @property
    def per_policy(self) -> bool:
        """Whether each learning policy's training reward is a column: several of them learn."""
        return len(self.learners) > 1

    def columns(self) -> tuple[str, ...]:
        """The columns after the standard ones (``relayrl.experiment.metrics.COLUMNS``)."""
        rounds = ("round",) if self.rounds else ()
        if self.one_policy:
            return (*rounds, *self.main_columns)
        return (
            *rounds,
            *(f"episode_reward_mean/{n}" for n in self.groups),
            *(f"eval_reward_mean/{n}" for n in self.groups),
            *(f"td_loss/{n}" for n in self.learners),
            *(f"policy_reward_mean/{n}" for n in self.learners if self.per_policy),
            *self.exchange_columns,
        )


class Reporter:
    """Tallies episodes and seconds, then writes its row. ``label``: the
    progress line's tag; ``rounds``: the number of rounds (0 without)."""

    def __init__(self, layout: ReportLayout, label: str, total_steps: int, rounds: int, verbose: bool) -> None:
        self.layout = layout
        self.label = label
        self.total_steps = total_steps
        self.rounds = rounds
        self.verbose = verbose
        self.tally = Tally()
        self.recent_returns: deque[float] = deque(maxlen=100)  # RLlib's episode_reward_mean window
        self.history: list[dict[str, float]] = []  # the rows written by this process
        self.writer: MetricsWriter | None = None
        self.sharing = False  # whether a learner relays (the progress line shows the bandwidth)

    def open(self, run_dir: Path, resumed_at: int, rows: int | None) -> int:
        """Writes into the run directory's metrics from now on; a resume drops the rows the
        checkpoint had not seen. Returns the rows kept."""
        self.writer = MetricsWriter(run_dir, resumed_at, rows, self.layout.columns())
        return self.writer.rows

    def record(self, episodes: Any, env_steps: int, matches: list[Any]) -> None:
        """A fragment of ``env_steps`` env steps and the episodes it finished, played under ``matches``."""
        if self.layout.per_policy:
            for pid, returns in returns_by_policy(episodes.returns, episodes.copies, matches, self.layout.groups).items():
                if pid in self.layout.learners:
                    self.tally.policy_returns.setdefault(pid, []).extend(returns)
        self.tally.episode_returns += episodes.returns
        self.tally.episode_lengths += episodes.lengths
        self.recent_returns.extend(float(r[self.layout.reported]) for r in episodes.returns)
        self.tally.env_steps += env_steps

    def tick(self, seconds: float) -> None:
        """Training seconds (not evaluation or saving) in the tally."""
        self.tally.seconds += seconds

    def row(
        self, counters: Any, reports: dict[str, dict[str, Any]], exchanged: dict[str, float], evaluated: np.ndarray | None, round_index: int
    ) -> dict[str, float]:
        """The tally's row: ``counters`` (env and agent steps, wall clock), each learner's
        report, the exchanges' columns, the greedy evaluation ``[episodes, n_groups]`` where
        one was due. The tally starts again."""
        layout, w, nan = self.layout, self.tally, math.nan
        returns = np.array(w.episode_returns).reshape(-1, len(layout.groups))
        main = reports[layout.main]
        relays = [r["relay"] for r in reports.values() if r["relay"] is not None]
        offered = np.concatenate([r.offered for r in relays]) if relays else np.zeros(0)
        sent = np.concatenate([r.sent for r in relays]) if relays else np.zeros(0)
        bandwidth = np.divide(sent, offered, out=np.full(sent.shape, np.nan), where=offered > 0)
        row: dict[str, float] = {
            "env_steps": counters.env_steps,
            "agent_steps": counters.agent_steps,
            "updates": main["updates"],
            "episodes": len(returns),
            "episode_reward_mean": float(returns[:, layout.reported].mean()) if len(returns) else nan,
            "episode_reward_mean_100": float(np.mean(self.recent_returns)) if self.recent_returns else nan,
            "eval_reward_mean": nan,
            "episode_len_mean": float(np.mean(w.episode_lengths)) if w.episode_lengths else nan,
            "bandwidth_actual": float(np.nanmean(bandwidth)) if (offered > 0).any() else nan,
            "transitions_relayed": int(sent.sum()),
            "bytes_relayed": sum(r.bytes_sent for r in relays),
            "td_loss": main["td_loss"],
            "grad_norm": main["grad_norm"],
            "epsilon": main["epsilon"],
            "sps": w.env_steps / w.seconds if w.seconds > 0 else nan,
            "updates_per_s": main["new_updates"] / w.seconds if w.seconds > 0 else nan,
            "wall_s": counters.wall_s,
        }
        if layout.rounds:
            row["round"] = round_index
        if layout.one_policy:
            row.update({key: main[key] for key in layout.main_columns})
        else:
            for g, name in enumerate(layout.groups):
                row[f"episode_reward_mean/{name}"] = float(returns[:, g].mean()) if len(returns) else nan
            row.update({f"td_loss/{pid}": reports[pid]["td_loss"] for pid in layout.learners})
            if layout.per_policy:
                row.update({f"policy_reward_mean/{pid}": float(np.mean(w.policy_returns[pid])) if w.policy_returns.get(pid) else nan for pid in layout.learners})
            row.update(exchanged)
        if evaluated is not None:
            row["eval_reward_mean"] = float(evaluated[:, layout.reported].mean())
            if len(layout.groups) > 1:
                row.update({f"eval_reward_mean/{name}": float(evaluated[:, g].mean()) for g, name in enumerate(layout.groups)})
        self.tally = Tally()
        self.sharing = bool(relays)
        return row

    def write(self, row: dict[str, float], round_index: int) -> int | None:
        """Keeps the row (history, metrics files) and shows its progress line; returns the
        rows in metrics.csv (None without a run directory)."""
        self.history.append(row)
        if self.verbose:
            self._print(row, round_index)
        if self.writer is None:
            return None
        self.writer.write(row)
        return self.writer.rows

    def _print(self, row: dict[str, float], round_index: int) -> None:
        steps, total, sps = int(row["env_steps"]), self.total_steps, row["sps"]
        # the last fragment may pass the budget by a few steps: the run is then done
        eta = max(0, total - steps) / sps if sps and sps > 0 else math.nan
        reward = row["episode_reward_mean"]
        parts = [
            self.label,
            *([f"round {round_index + 1}/{self.rounds}"] if self.rounds else []),
            f"steps {steps:,}/{total:,} ({min(100.0, 100 * steps / total):.1f}%)",
            f"{sps:,.0f} sps",
            f"{row['updates_per_s']:,.0f} upd/s",
            f"reward {reward:.2f}" if math.isfinite(reward) else "reward - (no episode ended yet)",
        ]
        if not math.isnan(row["eval_reward_mean"]):
            parts.append(f"eval {row['eval_reward_mean']:.2f}")
        if self.sharing:
            parts.append(f"bw {row['bandwidth_actual']:.3f}")
        parts.append(f"eta {eta / 60:.1f} min" if math.isfinite(eta) else "eta -")
        print(" | ".join(parts), flush=True)

    def state_dict(self) -> dict[str, Any]:
        return {"tally": asdict(self.tally), "recent_returns": list(self.recent_returns)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        w = state["tally"]
        by_policy = w.get("policy_returns", {})  # checkpoints written before the per-policy columns have none
        self.tally = Tally(w["env_steps"], list(w["episode_returns"]), list(w["episode_lengths"]), w["seconds"], {k: list(v) for k, v in by_policy.items()})
        self.recent_returns = deque(state["recent_returns"], maxlen=100)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
