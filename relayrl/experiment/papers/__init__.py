"""The papers ``relayrl reproduce`` reproduces, a module each (``super``: paper 000, ``dase``:
paper 001, ``accmer``: papers 002 and 003, ``arena``: paper 004's training schemes, ``seac``:
the policy-gradient learners against SEAC's paper) holding
its grid of runs, the options it takes and its report; ``common`` holds what several share.
``PAPERS`` lists the modules in the order the command offers them."""

import argparse
from pathlib import Path
from collections.abc import Sequence
from typing import Protocol

from relayrl.core.errors import RelayRLError
from relayrl.core.registry import Registry
from relayrl.experiment.grid import Job
from relayrl.experiment.papers import accmer, arena, dase, seac
from relayrl.experiment.papers import super as super_paper

# the reproduce options (argparse dests) that only some papers take
SPECIFIC_OPTIONS = ("domains", "tasks", "settings", "examples", "algos", "steps", "scale_switch_from")


class Paper(Protocol):
    """A paper's module as ``relayrl reproduce`` runs it."""

    NAME: str
    RESULTS: str
    """Its folder under docs/results."""
    OPTIONS: frozenset[str]
    """The ``SPECIFIC_OPTIONS`` it takes."""
    CHOICES: dict[str, Sequence[str]]
    """Its options that choose what the grid covers (tasks, domains, settings, examples; a
    variant where its tables show only those chosen), each with every value it knows."""
    REFUSAL: tuple[frozenset[str], str]
    """Other papers' options it refuses with a message of its own, naming the options it
    takes, and that message; any other is refused by naming the papers that take it."""

    def jobs(self, args: argparse.Namespace) -> list[Job]:
        """Its grid for the parsed options (a value it does not know is a RelayRLError)."""
        ...

    def studies(self, args: argparse.Namespace, results: Path) -> list[str]:
        """Measurements outside the grid that the options ask for, made before it (in a dry
        run too) and written under ``results``; returns the lines to print."""
        ...

    def report(self, args: argparse.Namespace, results: Path) -> tuple[list[Path], list[str]]:
        """Writes its tables and figures under ``results`` from the metrics copied there;
        returns the files written and the lines to print."""
        ...


PAPERS: Registry[Paper] = Registry("paper")
for _paper in (super_paper, dase, accmer, arena, seac):
    PAPERS.add(_paper.NAME, _paper)


def with_kept(paper: Paper, args: argparse.Namespace, results: Path) -> argparse.Namespace:
    """``args`` with each of ``paper.CHOICES`` widened to the values whose runs have metrics
    kept under ``results`` (in the order the paper knows them), so that the status, tables
    and figures written after part of a grid (``--tasks rware-tiny-2ag``) still show the runs
    kept before it."""
    from relayrl.experiment.grid import kept_progress

    chosen = {job.preset for job in paper.jobs(args)}
    everything = argparse.Namespace(**{**vars(args), **{option: list(values) for option, values in paper.CHOICES.items()}})
    wider = argparse.Namespace(**vars(args))

    def jobs_with(base: argparse.Namespace, option: str, value: str) -> list[Job]:
        return paper.jobs(argparse.Namespace(**{**vars(base), option: [value]}))

    for option, values in paper.CHOICES.items():
        setattr(wider, option, [
            value for value in values
            if any(job.preset in chosen for job in jobs_with(args, option, value))
            or any(kept_progress(job, results) > 0 for job in jobs_with(everything, option, value))
        ])
    return wider


def check_options(paper: Paper, args: argparse.Namespace) -> None:
    """Refuses the ``SPECIFIC_OPTIONS`` given that ``paper`` does not take."""
    foreign = [o for o in SPECIFIC_OPTIONS if getattr(args, o) and o not in paper.OPTIONS]
    refused, refusal = paper.REFUSAL
    for option in foreign:
        if option not in refused:
            owners = " and ".join(name for name in PAPERS if option in PAPERS[name].OPTIONS)
            raise RelayRLError(f"--{option.replace('_', '-')} is an option of reproduce {owners}")
    if foreign:
        raise RelayRLError(refusal)
