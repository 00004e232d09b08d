"""``relayrl reproduce``: a paper's experiment grid, its progress and its report."""

import argparse
import sys
import time
from pathlib import Path

from relayrl.core.errors import RelayRLError


def reproduce(args: argparse.Namespace) -> None:
    """Runs (or, with --dry-run, lists; with --report-only, only reports) a paper's grid of
    runs given the command line's arguments, then writes its status, tables and figures."""
    from relayrl.experiment.grid import collect, kept_progress, progress, run_grid, status_table, with_dependencies
    from relayrl.experiment.papers import PAPERS, check_options, with_kept
    from relayrl.experiment.presets import PRESETS

    if args.paper not in PAPERS:
        raise RelayRLError(f"unknown paper {args.paper!r}; choose from {', '.join(PAPERS)}")
    paper = PAPERS[args.paper]
    check_options(paper, args)
    jobs = paper.jobs(args)
    if not jobs:
        raise RelayRLError(f"no presets match --algos {args.algos}; relayrl list shows the variants")
    missing = sorted({j.preset for j in jobs} - set(PRESETS))
    if missing:
        raise RelayRLError(f"no preset {missing[0]!r}: check --algos against relayrl list")
    root, results = Path(args.out), Path(args.results or f"docs/results/{paper.RESULTS}")
    for line in paper.studies(args, results):
        print(line)
    if args.dry_run:
        planned = with_dependencies(jobs)
        print(f"{'done':>11} / {'budget':<11}  run (under {root})")
        done = [progress(job, root) for job in planned]
        for job, steps in zip(planned, done):
            print(f"{steps:>11,} / {job.steps:<11,}  {job.preset} seed {job.seed}")
        print(f"{sum(done):>11,} / {sum(j.steps for j in planned):<11,}  {len(planned)} runs in all")
        return
    if not args.report_only:
        status = run_grid(jobs, root, args.jobs, args.backend, results=results, threads=args.threads)
        failed = [j.name for j, s in status.items() if s != "complete"]
        if failed:
            print(f"{len(failed)} job(s) did not complete: {', '.join(failed)}", file=sys.stderr)
    copied = collect(jobs, root, results)
    results.mkdir(parents=True, exist_ok=True)
    shown = with_kept(paper, args, results)  # a report of part of the grid keeps the rest's rows
    listed = [job for job in paper.jobs(shown) if job in jobs or kept_progress(job, results) > 0]
    stamp = time.strftime("%Y-%m-%d %H:%M %Z")
    (results / "status.md").write_text(f"# Progress of the selected jobs and those kept before, {stamp}\n\n{status_table(listed, root, results)}\n")
    written, lines = paper.report(shown, results)
    print(f"copied the metrics of {copied} run(s) into {results / 'runs'}; wrote {', '.join(str(p) for p in written)}")
    for line in lines:
        print(line)
