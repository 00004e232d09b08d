"""The run: a thin driver over its components (DESIGN.md §4), composed by ``build.build_run``.

Per iteration (SPEC §1.1), as Stable-Baselines3's ``learn`` reads: collect a fragment of
every env copy, record it (rounds, reporter), the learners observe, exchange and learn (one
update per agent per ``fragment_length`` env steps over all copies), the collector takes
their acting networks. Then the clock says what is due. Nothing here asks where the copies
step or the learners learn, or names a metric.
"""

import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from relayrl.arena.collect import Collector, Venue
from relayrl.arena.learning import LearnerPool
from relayrl.arena.policy import Policy
from relayrl.arena.round import RoundSchedule
from relayrl.core.errors import StopError
from relayrl.core.memory import release_freed_memory
from relayrl.core.profiler import SectionTimer
from relayrl.core.seeding import derive_seeds
from relayrl.experiment.clock import Clock, Counters
from relayrl.experiment.config import RunConfig
from relayrl.experiment.identity import check_resumable
from relayrl.experiment.evaluation import Evaluator
from relayrl.experiment.report import Reporter
from relayrl.experiment.run_dir import RunDirectory


@dataclass(eq=False)
class Run:
    """Trains the policies of a config; a run directory makes it checkpointed and resumable.
    ``venues(index)`` is round ``index``'s venue (the run's without rounds)."""

    config: RunConfig
    run_dir: RunDirectory | None
    policies: dict[str, Policy]
    learners: LearnerPool
    collector: Collector
    venues: Any
    rounds: RoundSchedule
    reporter: Reporter
    evaluator: Evaluator
    clock: Clock
    n_steps: int  # steps of every env copy per fragment
    timer: SectionTimer
    policy_sources: dict[str, str]  # policy id -> the checkpoint its networks (frozen) or its start (learning) came from
    verbose: bool

    def __post_init__(self) -> None:
        self.counters: Counters = self.clock.counters
        self.venue: Venue = self.venues(0)
        self._open(self.venue)
        self.started = False  # the env copies were reset or restored
        self.stop_requested = False

    # ------------------------------------------------------------------ the loop
    def start(self) -> int:
        """Opens the run directory and resumes from its newest checkpoint, or resets the env
        copies (and begins the first round); the learners go where they learn. Returns the
        env step it starts at."""
        resumed_at = 0
        if self.run_dir is not None:
            self.run_dir.open()
            if self.run_dir.resume(self.load_state_dict):
                resumed_at = self.counters.env_steps
                release_freed_memory()  # the checkpoint's copies of the replays
            # metrics first: a resume that cannot rewrite them stops before anything else is written
            self.counters.metric_rows = self.reporter.open(self.run_dir.path, resumed_at, self.counters.metric_rows)
            self.run_dir.record_start(resumed_at, self.policy_sources)
        if not self.started:
            if self.rounds:
                self.rounds.begin(0, self.counters.env_steps, self.policies, self.venue.matches)
            self.collector.reset(self.config.seed)
            self.started = True
        if self.rounds and resumed_at and self.clock.due("round") and self.counters.round + 1 < len(self.config.rounds):
            # resumed at the end of what was its last round, with rounds added since: that
            # round ended (its schemes and hooks ran) before the checkpoint; the next begins
            self._next_round()  # and sends the learners away
        else:
            self.learners.away()
        return resumed_at

    def iteration(self) -> None:
        """Collect; record; every learner observes its policy's fragment, the learners
        exchange what they share and learn; the collector takes their acting networks."""
        c = self.counters
        got = self.collector.collect(self.n_steps, c.env_steps)
        self.learners.end_workers(got.restarted)
        c.env_steps += got.env_steps
        self.rounds.record(c.round, c.env_steps, got.fragments, got.episodes, self.collector.cut_episodes)
        self.reporter.record(got.episodes, got.env_steps, self.venue.matches)
        c.agent_steps += self.learners.step(got.fragments, c.env_steps)
        self.collector.sync(self.learners)
        c.iterations += 1

    def train(self) -> list[dict[str, float]]:
        """Runs until ``total_steps``; returns the metric rows written by this process.

        Ctrl-C stops at once: the metrics written so far and the last checkpoint are kept
        (checkpoints are atomic), and ``relayrl resume`` continues from that checkpoint.
        SIGTERM (a scheduler's or a grid's stop) finishes the current iteration, saves a
        checkpoint there and then stops as Ctrl-C does, so a stopped run loses nothing.
        """
        try:
            self.start()
        except BaseException:
            self._release()
            raise
        c = self.counters
        self.stop_requested = False
        handles_sigterm = self.run_dir is not None and threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop_requested", True)) if handles_sigterm else None
        try:
            tick = time.perf_counter()
            while c.env_steps < self.config.total_steps:
                if self.stop_requested:
                    if self.run_dir is not None and not self.run_dir.saved_at(c.env_steps):
                        self.save()
                    print(f"\nstopped by SIGTERM at env step {c.env_steps:,}, checkpoint saved", file=sys.stderr)
                    raise KeyboardInterrupt
                self.iteration()
                seconds = time.perf_counter() - tick
                self.reporter.tick(seconds)
                c.wall_s += seconds
                self._on_clock()
                tick = time.perf_counter()  # evaluation and saving are not training throughput
            self.learners.call_home()
            for line in self.learners.idle():
                print(f"warning: {line}; the run ended at env step {c.env_steps:,}", file=sys.stderr)
        except StopError as error:
            kept = self.run_dir.kept() if self.run_dir is not None else "no checkpoint was written"
            resume = f": {self.run_dir.resume_hint()}" if self.run_dir is not None else ""
            raise type(error)(f"{error}, at env step {c.env_steps:,}. The run stopped there; {kept}. {error.fix}, then resume{resume}") from None
        except KeyboardInterrupt:
            if self.verbose:
                last = self.run_dir.latest() if self.run_dir is not None else None
                where = f"; last checkpoint {last.name}, continue with: {self.run_dir.resume_hint()}" if last and self.run_dir else ""
                print(f"\ninterrupted at env step {c.env_steps:,}{where}", file=sys.stderr)
            raise
        finally:
            if handles_sigterm:
                signal.signal(signal.SIGTERM, previous)
            self.learners.close()  # after an error the checkpoint on disk is the state
            self._release()
        return self.reporter.history

    def _on_clock(self) -> None:
        """What the clock says is due after an iteration, in order: a round's end (its schemes
        and hooks see the learners at home), the report, the next round, the checkpoint. A
        checkpoint off the report grid (a budget's end) is taken before the report, so that
        it keeps the tally unreported and a resumed run writes the rows an uninterrupted one
        does; one at a new round is taken once the round has begun."""
        clock, at_end = self.clock, self.counters.env_steps >= self.config.total_steps
        report, checkpoint, round_over = clock.due("report"), clock.due("checkpoint") or at_end, clock.due("round")
        if round_over:
            self.learners.call_home()
            groups = [g.name for g in self.venue.venv.groups]
            self.rounds.end(self.counters.round, self.counters.env_steps, self.policies, groups, self.venue.matches)
        next_round = round_over and not at_end
        if checkpoint and not report and not next_round:
            self._checkpoint()
        if report or at_end:
            with self.timer("logging"):
                self._report()
        if next_round:
            self._next_round()
        if (checkpoint and report) or next_round:
            self._checkpoint()

    def _report(self) -> None:
        reports = self.learners.report(self.counters.env_steps)
        evaluated = None
        if self.clock.due("eval"):
            evaluated = self.evaluator.greedy(self.config.eval.episodes)
            self.clock.fire("eval")
        row = self.reporter.row(self.counters, reports, self.learners.exchange_report(reports), evaluated, self.counters.round)
        self.clock.fire("report")
        self.counters.metric_rows = self.reporter.write(row, self.counters.round)  # None without a run directory

    def _next_round(self) -> None:
        """The next round begins: its venue, its schemes and hooks, then its env copies
        (reset with the round's seed) and the learners going where they learn."""
        index = self.counters.round = self.counters.round + 1
        self.venue = self.venues(index)
        self._open(self.venue)
        self.rounds.begin(index, self.counters.env_steps, self.policies, self.venue.matches)
        self.collector.reset(derive_seeds(self.config.seed, 1, f"round/{index}")[0])
        self.learners.away()

    def _open(self, venue: Venue) -> None:  # the collector and the evaluator play the venue from now on
        self.collector.open(venue)
        self.evaluator.open(venue)

    def _checkpoint(self) -> None:
        self.clock.fire("checkpoint")
        self.save()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs, as data. Replay rows are views of the live buffers (no
        second copy in memory): write the state, as ``save`` does, before training on."""
        self.learners.end_workers(self.collector.revive(self.counters.env_steps))  # copies whose runner died
        self.learners.sync_home()
        return {
            "config": self.config.model_dump(mode="json"),
            "counters": asdict(self.counters),
            **self.reporter.state_dict(),
            "policies": {pid: policy.state_dict() for pid, policy in self.policies.items()},
            **self.collector.state_dict(),
            **self.rounds.state_dict(),
            **self.learners.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any], source: str = "the checkpoint") -> None:
        check_resumable(state["config"], self.config, source)
        self.counters = self.clock.counters = Counters(**state["counters"])
        self.reporter.load_state_dict(state)
        for pid, policy in self.policies.items():
            policy.load_state_dict(state["policies"][pid])
        self.learners.load_state_dict(state)
        if self.rounds:
            self.rounds.load_state_dict(state)
        self.venue = self.venues(self.counters.round)
        self._open(self.venue)
        reason = self.collector.load_state_dict(state)
        if reason is not None:
            print(f"note: {reason}: resuming from {source}, in-flight episodes restart from new resets "
                  "(learners, replays, selectors and counters resume exactly)", file=sys.stderr)
            self.collector.reset(self.config.seed + self.counters.iterations)
        self.started = True

    def save(self) -> None:
        if self.run_dir is not None:
            state, acting = self.state_dict(), {pid: policy.policy_state() for pid, policy in self.policies.items()}
            self.run_dir.save(self.counters.env_steps, state, acting)

    @property
    def updates(self) -> int:
        """Gradient steps per agent of the reported learner so far."""
        return self.learners[self.reporter.layout.main].updates

    def _release(self) -> None:  # the metrics files and the run directory's lock
        self.reporter.close()
        if self.run_dir is not None:
            self.run_dir.release()

    def close(self) -> None:
        """Closes the env copies (here and in runners) and the evaluation's."""
        self.collector.close()
        self.evaluator.close()
        self.venues.close()
