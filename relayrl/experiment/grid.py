"""Runs a grid of (preset, seed, env steps) jobs in parallel processes or on Ray.

A job is complete when a run directory with the same config hash (whatever preset name it
was started under) has a checkpoint at or past the job's env steps; complete jobs are
skipped, interrupted ones resume from their last checkpoint, a job whose frozen
opponents come from a pretraining preset waits until that run is complete, and a run
being trained by a process outside the grid (its run lock is held) is waited for.

Run directories do not survive a change of machine; the metrics the grid kept under the
results folder do. A job whose kept metrics reach its budget is complete (unless another
job needs its checkpoint as frozen opponents), and a restarted run never overwrites kept
metrics that went further than it has. A complete pretraining run's frozen opponents (the
final networks of the policies other jobs load, a few MB) are kept there too, and a later
grid on another machine restores them instead of training the pretraining again.
"""

import csv
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from relayrl.arena.ray.runners import start_ray
from relayrl.experiment.checkpoint import CONFIG_FILE, checkpoint_steps, keep_policies, list_checkpoints, load_policies, write_atomically
from relayrl.experiment.config import RunConfig
from relayrl.experiment.identity import run_dir_for
from relayrl.experiment.presets import load_preset
from relayrl.experiment.run_lock import is_locked


@dataclass(frozen=True)
class Job:
    preset: str
    seed: int
    steps: int

    @property
    def name(self) -> str:
        return f"{self.preset} seed {self.seed} @ {self.steps:,}"

    def config(self) -> RunConfig:
        return load_preset(self.preset).model_copy(update={"seed": self.seed, "total_steps": self.steps})

    def dependencies(self) -> list["Job"]:
        """Pretraining runs whose checkpoints drive this job's frozen policies (evaluation-only ones too)."""
        return list(self.opponents())

    def opponents(self) -> dict["Job", list[str]]:
        """Each pretraining run this job's frozen policies load, with the ids of the
        policies they load from it."""
        return opponent_sources([self])


def find_run(config: RunConfig, root: Path) -> Path | None:
    """An existing run directory of this exact configuration and seed, under any preset name."""
    matches = sorted(root.glob(f"*-{config.config_hash()}/{config.seed}"))
    started = [m for m in matches if (m / "config.yaml").is_file()]
    return started[0] if started else None


def progress(job: Job, root: Path) -> int:
    """Env steps of the job's latest checkpoint (0 if it has not started)."""
    run = find_run(job.config(), root)
    done = list_checkpoints(run / "checkpoints") if run else []
    return checkpoint_steps(done[-1]) if done else 0


# Long runs are stopped and resumed between sessions: checkpoint often enough to lose
# little. A preset that checkpoints more often (the DASE runs) keeps its interval.
CHECKPOINT_INTERVAL = 25_000


def command(job: Job, root: Path, threads: int = 1) -> list[str]:
    """The CLI call that starts or continues the job, with ``threads`` torch threads. The
    count is always given: a resume otherwise keeps the threads its run was started with,
    and two threads beside another busy run on two cores spin in OpenMP's barriers (an
    Adversarial-Pursuit resume ran at 3 env steps/s instead of about 50)."""
    run = find_run(job.config(), root)
    cli = [sys.executable, "-m", "relayrl.cli"]
    interval = min(CHECKPOINT_INTERVAL, job.config().checkpoint_interval, job.steps)
    budget = [f"total_steps={job.steps}", f"checkpoint_interval={interval}", f"torch_threads={threads}"]
    if run is not None:
        return [*cli, "resume", str(run), *budget]
    return [*cli, "train", job.preset, *budget, "--seed", str(job.seed), "--out", str(root)]


class ProcessBackend:
    """Each job in its own process."""

    def launch(self, cmd: list[str], log: Path) -> Any:
        handle = log.open("a")
        return subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT), handle

    def poll(self, token: Any) -> int | None:
        proc, handle = token
        rc = proc.poll()
        if rc is not None:
            handle.close()
        return rc

    def stop(self, token: Any) -> None:
        proc, handle = token
        proc.terminate()
        proc.wait()
        handle.close()

    def close(self) -> None:
        pass


class RayBackend:
    """Each job as a Ray task of ``threads`` CPUs on the local or connected cluster."""

    def __init__(self, jobs: int, threads: int = 1) -> None:
        ray, self.started = start_ray(None, jobs * threads)
        self.ray = ray

        @ray.remote(num_cpus=threads)
        def run(cmd: list[str], log: str) -> int:
            with open(log, "a") as handle:
                return subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT).returncode

        self._run = run

    def launch(self, cmd: list[str], log: Path) -> Any:
        return self._run.remote(cmd, str(log))

    def poll(self, token: Any) -> int | None:
        ready, _ = self.ray.wait([token], timeout=0)
        return self.ray.get(ready[0]) if ready else None

    def stop(self, token: Any) -> None:
        self.ray.cancel(token, force=True)

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def with_dependencies(jobs: list[Job]) -> list[Job]:
    """The jobs in order, each preceded by the pretraining runs it needs; a run asked for at
    several budgets (a sweep point that is also a Table 1 run) is one job, at the largest."""
    longest: dict[tuple[str, int], int] = {}
    for job in jobs:
        for one in [*job.dependencies(), job]:
            key = (one.preset, one.seed)
            longest[key] = max(longest.get(key, 0), one.steps)
    ordered: list[Job] = []
    for job in jobs:
        for one in [*job.dependencies(), job]:
            merged = Job(one.preset, one.seed, longest[(one.preset, one.seed)])
            if merged not in ordered:
                ordered.append(merged)
    return ordered


def metrics_steps(path: Path) -> int:
    """The last env step in a metrics file (0 if there is none)."""
    if not path.is_file():
        return 0
    with path.open(newline="") as handle:
        steps = [int(float(row["env_steps"])) for row in csv.DictReader(handle)]
    return max(steps, default=0)


def kept_run(job: Job, results: Path) -> Path:
    """Where the job's metrics, config and kept policies are kept: ``results/runs/<preset>-<hash>/<seed>``."""
    config = job.config()
    return results / "runs" / f"{config.preset}-{config.config_hash()}" / str(job.seed)


def kept_progress(job: Job, results: Path) -> int:
    """Env steps of the job's metrics kept under ``results/runs`` (0 if none): a run whose
    directory is gone (another machine) still counts as far as its metrics go."""
    return metrics_steps(kept_run(job, results) / "metrics.csv")


# A kept pretraining run's folder for the final networks of the policies that frozen
# opponents load (a checkpoint of policies only, a few MB): tier 2 of a grid needs them,
# and they outlive the run directory (GB of replay), which a change of machine loses.
KEPT_POLICIES = "policies"


def opponent_sources(jobs: list[Job]) -> dict[Job, list[str]]:
    """Every pretraining run the jobs' frozen policies (evaluation-only ones too) load, with
    the policy ids loaded from it."""
    found: dict[Job, list[str]] = {}
    for job in jobs:
        config = job.config()
        for pid, policy in [*config.policies.items(), *config.eval.policies.items()]:
            if policy.pretrained is not None:
                ids = found.setdefault(Job(policy.pretrained, policy.pretrained_seed, load_preset(policy.pretrained).total_steps), [])
                if (policy.pretrained_policy or pid) not in ids:
                    ids.append(policy.pretrained_policy or pid)
    return found


def keep_opponents(jobs: list[Job], root: Path, results: Path) -> list[Path]:
    """Copies the final networks of the policies the jobs' frozen opponents load, from each
    complete pretraining run under ``root``, to ``<kept run>/policies/step_<n>``; returns
    the checkpoints written (those kept already are not written again)."""
    written = []
    for source, pids in opponent_sources(jobs).items():
        run = find_run(source.config(), root)
        done = list_checkpoints(run / "checkpoints") if run else []
        if not done or checkpoint_steps(done[-1]) < source.steps:
            continue
        have = list_checkpoints(kept_run(source, results) / KEPT_POLICIES)
        if have and checkpoint_steps(have[-1]) == checkpoint_steps(done[-1]) and load_policies(have[-1]).keys() >= set(pids):
            continue
        written.append(keep_policies(done[-1], kept_run(source, results) / KEPT_POLICIES, pids))
    return written


def restore_opponents(jobs: list[Job], root: Path, results: Path, say: Callable[[str], None]) -> None:
    """For each pretraining run the jobs need that ``root`` does not hold complete, but whose
    policies are kept at its budget: a run directory under ``root`` with the kept config,
    metrics and provenance and a checkpoint of those policies, so the jobs load them as
    frozen opponents instead of training it again. A run of it restarted from 0 under
    ``root`` is left alone (it is named, with the way to use the kept policies)."""
    for source in opponent_sources(jobs):
        kept = kept_run(source, results)
        have = list_checkpoints(kept / KEPT_POLICIES)
        if progress(source, root) >= source.steps or not have or checkpoint_steps(have[-1]) < source.steps:
            continue
        run = find_run(source.config(), root)
        if run is not None:
            say(f"not restored: {source.name} has kept policies ({have[-1]}), but {run} holds a restart of it; "
                "delete that run directory to use the kept ones")
            continue
        config = source.config()
        run = run_dir_for(config, root)
        run.mkdir(parents=True)
        for name in (CONFIG_FILE, "metrics.csv", "provenance.yaml"):
            if (kept / name).is_file():
                shutil.copy2(kept / name, run / name)
        if not (run / CONFIG_FILE).is_file():
            write_atomically(run / CONFIG_FILE, yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
        shutil.copytree(have[-1], run / "checkpoints" / have[-1].name)
        say(f"restored: {source.name} from its kept policies {have[-1]} (frozen opponents only: it cannot be resumed)")


def complete_by_kept_metrics(jobs: list[Job], root: Path, results: Path) -> list[Job]:
    """Jobs with no checkpoint at their budget whose kept metrics reach it, and whose
    checkpoint no unfinished job needs (frozen opponents load it)."""
    ordered = with_dependencies(jobs)
    kept = {j for j in ordered if progress(j, root) < j.steps <= kept_progress(j, results)}
    unfinished = [j for j in ordered if j not in kept and progress(j, root) < j.steps]
    needed = {n for j in unfinished for n in j.dependencies()}
    return [j for j in ordered if j in kept and j not in needed]


def status_table(jobs: list[Job], root: Path, results: Path) -> str:
    """Markdown: every job (with its pretraining runs) and its progress in env steps: its
    latest checkpoint under ``root``, or the metrics kept under ``results`` (what the tables
    and figures are drawn from), whichever went further; a run that started again from 0
    behind its kept metrics (its directory was lost with a machine: its own metrics are
    shorter than those kept) says so, as does one whose directory is not on this machine at
    all (the grid trains it from 0), and a pretraining run whose frozen opponents are kept."""
    sources = opponent_sources(jobs)
    lines = ["| run | seed | env steps | target | state |", "|---|---:|---:|---:|---|"]
    for job in with_dependencies(jobs):
        here, kept = progress(job, root), kept_progress(job, results)
        done = max(here, kept)
        run = find_run(job.config(), root)
        state = "complete" if done >= job.steps else "running" if run is not None and is_locked(run) else "started" if done else "not started"
        if run is not None and metrics_steps(run / "metrics.csv") < kept < job.steps:
            state = f"restarted from 0 ({here:,} in this run)"
        elif run is None and 0 < kept < job.steps:
            state = "metrics kept, run directory not on this machine: trains again from 0"
        kept_policies = list_checkpoints(kept_run(job, results) / KEPT_POLICIES) if job in sources else []
        if kept_policies and checkpoint_steps(kept_policies[-1]) >= job.steps:
            state += f", opponents kept ({', '.join(sources[job])})"
        lines.append(f"| {job.preset} | {job.seed} | {done:,} | {job.steps:,} | {state} |")
    return "\n".join(lines)


def run_grid(
    jobs: list[Job],
    root: Path,
    parallel: int,
    backend: str = "processes",
    say: Callable[[str], None] = print,
    results: Path | None = None,
    threads: int = 1,
) -> dict[Job, str]:
    """Runs the jobs (and the pretraining runs they need), ``parallel`` at a time, each on
    ``threads`` torch threads, in the given order of priority. Returns each job's final
    status. With ``results``, jobs whose metrics kept there are complete do not run again.

    Ctrl-C or SIGTERM stops the grid: each running job gets SIGTERM, saves a checkpoint and
    exits, so running the grid again resumes everything. SIGTERM matters because a grid
    started in the background (``nohup ... &``) ignores SIGINT."""
    ordered = with_dependencies(jobs)
    if results is not None:
        restore_opponents(jobs, root, results, say)
    status = {j: "complete" for j in ordered if progress(j, root) >= j.steps}
    for job in status:
        say(f"complete: {job.name}")
    for job in complete_by_kept_metrics(jobs, root, results) if results is not None else []:
        status[job] = "complete"
        say(f"complete (kept metrics): {job.name}")
    pending = [j for j in ordered if j not in status]
    if not pending:
        return status
    runner = RayBackend(parallel, threads) if backend == "ray" else ProcessBackend()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    running: dict[Job, Any] = {}
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        while pending or running:
            for job, token in list(running.items()):
                rc = runner.poll(token)
                if rc is None:
                    continue
                del running[job]
                status[job] = "complete" if rc == 0 and progress(job, root) >= job.steps else f"failed (exit {rc})"
                say(f"{status[job]}: {job.name}")
                for kept in keep_opponents(jobs, root, results) if results is not None else []:
                    say(f"kept the frozen opponents' networks in {kept}")
            for job in list(pending):
                if len(running) >= parallel:
                    break
                needs = job.dependencies()
                if any(status.get(n, "").startswith("failed") for n in needs):
                    pending.remove(job)
                    status[job] = "skipped (pretraining failed)"
                    say(f"{status[job]}: {job.name}")
                    continue
                if any(status.get(n) != "complete" for n in needs):
                    continue
                run = find_run(job.config(), root)
                if run is not None and is_locked(run):
                    continue  # trained by a process outside this grid: wait for it
                if progress(job, root) >= job.steps:
                    pending.remove(job)
                    status[job] = "complete"
                    say(f"complete: {job.name}")
                    continue
                pending.remove(job)
                log = root / "logs" / f"{job.preset}-s{job.seed}.log"
                say(f"start: {job.name} (log {log})")
                running[job] = runner.launch(command(job, root, threads), log)
            time.sleep(2)
    except KeyboardInterrupt:
        for token in running.values():
            runner.stop(token)  # each run keeps its last checkpoint; run again to resume
        raise
    finally:
        runner.close()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return status


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def collect(jobs: list[Job], root: Path, results: Path) -> int:
    """Copies each job's metrics, config and scheme table into ``results/runs/<run dir>/<seed>/``,
    and the frozen opponents' networks of complete pretraining runs (``keep_opponents``);
    returns how many runs were copied. A run restarted on another machine is not copied
    while the metrics kept from its lost directory reach further."""
    keep_opponents(jobs, root, results)
    copied = 0
    seen: set[Path] = set()
    for job in jobs:
        for needed in [*job.dependencies(), job]:
            run = find_run(needed.config(), root)
            if run is None or run in seen or not (run / "metrics.csv").is_file():
                continue
            seen.add(run)
            dest = results / "runs" / run.parent.name / run.name
            if metrics_steps(dest / "metrics.csv") > metrics_steps(run / "metrics.csv"):
                continue
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("metrics.csv", "config.yaml", "provenance.yaml", "pbt.csv", "tournament.csv", "selfplay.csv"):
                if (run / name).is_file():
                    shutil.copy2(run / name, dest / name)
            copied += 1
    return copied
