"""Same numbers before and after a refactor: short fixed-seed runs of the paper presets,
their metrics kept under a label, and a table comparing two labels column by column.

    python benchmarks/same_numbers.py record LABEL [--out RUNS] [--results DIR] [--cases CASE ...]
    python benchmarks/same_numbers.py compare BEFORE AFTER [--results DIR] [--table NAME] [--cases CASE ...]

``record`` trains every case below with the relayrl this Python imports (for the code
before a change: a git worktree at that commit with its own environment) and copies each
run's metrics.csv to ``DIR/LABEL/<case>.csv`` with the machine's description. ``compare``
writes ``DIR/NAME`` (default table.md): per case, whether every column but the wall-clock
ones is equal.
CPU kernels round differently across machines, so compare labels recorded on one machine.
"""

import argparse
import csv
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# timings: seconds, and the shares and sums of seconds the learners and exchanges report
WALL_CLOCK = {"sps", "updates_per_s", "wall_s", "sample_share", "relay_seconds", "draw_seconds"}
PURSUIT = ["total_steps=3000", "report_interval=500", "eval.interval=1500", "eval.episodes=2", "checkpoint_interval=3000"]
MAGENT = ["total_steps=800", "report_interval=200", "eval.interval=0", "dqn.learning_starts=200", "checkpoint_interval=800"]
GYM = ["total_steps=3000", "report_interval=500", "eval.interval=1500", "eval.episodes=1", "actor_critic.random_steps=1000",
       "checkpoint_interval=3000"]
EPISODES = ["total_steps=3000", "report_interval=500", "eval.interval=1500", "eval.episodes=2", "checkpoint_interval=3000"]
EPISODE_ROUNDS = ["total_steps=6000", "rounds=[{steps: 2000}, {steps: 2000}, {steps: 2000}]"]
ROUNDS = ["total_steps=1200", "rounds=[{steps: 400}, {steps: 400}, {steps: 400}]"]
# two learners, one per env copy, relaying to each other / sharing one replay
RELAY = ["env.num_envs=2", "policies={a: {}, b: {}}", "match=[{pursuer: a}, {pursuer: b}]", "relay={between: [a, b]}"]
SHARED = ["policies={a: {}, b: {}}", "match=[{agent: [a, b]}]", "shared_replay={between: [a, b]}"]
RAY_ACTORS = ["backend.kind=ray", "backend.learners=actors", "backend.learner_cpus=0.5"]
# (case, preset, overrides); "{pretrained}" is the run directory of the battle-pretrain case
CASES = [
    ("pursuit-super-quantile", "pursuit-super-quantile", PURSUIT),
    ("pursuit-paramshare", "pursuit-paramshare", PURSUIT),
    ("pursuit-shareall", "pursuit-shareall", PURSUIT),
    ("battle-pretrain", "battle-pretrain", MAGENT),
    ("battle-super-quantile-frozen", "battle-super-quantile",
     [*MAGENT, "policies.red.pretrained=null", "policies.red.checkpoint={pretrained}"]),
    ("adversarial-pursuit-coevolve-super-quantile", "adversarial-pursuit-coevolve-super-quantile", MAGENT),
    ("halfcheetah-dase-td3", "halfcheetah-dase-td3", GYM),
    ("halfcheetah-dase-ddpg", "halfcheetah-dase-ddpg", GYM),
    ("halfcheetah-dase-sac", "halfcheetah-dase-sac", GYM),
    ("predator-prey-small-accmer", "predator-prey-small-accmer", EPISODES),
    ("spread-qmix-jaxmarl", "spread-qmix-jaxmarl", ["total_steps=4000", "report_interval=800", "eval.interval=2000", "eval.episodes=4", "checkpoint_interval=4000"]),
    ("spread-mappo-jaxmarl", "spread-mappo-jaxmarl", ["total_steps=6144", "report_interval=2048", "eval.interval=4096", "eval.episodes=4", "checkpoint_interval=6144"]),
    ("lbf-8x8-2p-2f-seac", "lbf-8x8-2p-2f-seac", EPISODES),
    ("pursuit-maddpg", "pursuit-maddpg", [*PURSUIT, "centralised.random_steps=1000", "centralised.batch_size=256"]),
    ("spread-continuous-masac", "spread-continuous-masac", [*PURSUIT, "centralised.random_steps=1000", "centralised.batch_size=256"]),
    ("spread-continuous-matd3", "spread-continuous-matd3", [*PURSUIT, "centralised.random_steps=1000", "centralised.batch_size=256"]),
    ("navigation-masac", "navigation-masac", [*PURSUIT, "centralised.random_steps=1000", "centralised.batch_size=256", "centralised.fragment_length=8",
                                              "centralised.updates_per_fragment=1"]),
    ("predator-prey-small-pbt-qmix", "predator-prey-small-pbt-qmix", [*EPISODES[1:], *EPISODE_ROUNDS]),
    ("pursuit-small-pbt-super", "pursuit-small-pbt-super", [*PURSUIT[1:], *ROUNDS]),
    ("battle-2v2-selfplay", "battle-2v2-selfplay", [*MAGENT[1:-1], "checkpoint_interval=400", "eval={interval: 0}", *ROUNDS]),
    ("battle-2v2-round-robin", "battle-2v2-round-robin", [*MAGENT[1:-1], "checkpoint_interval=400", *ROUNDS]),
    ("pursuit-relay-between", "pursuit-super-quantile", [*PURSUIT, *RELAY]),
    ("halfcheetah-shared-replay-between", "halfcheetah-dase-td3", [*GYM, *SHARED]),
    ("pursuit-relay-between-ray-actors", "pursuit-super-quantile", [*PURSUIT, *RELAY, *RAY_ACTORS]),
    ("halfcheetah-shared-replay-between-ray-actors", "halfcheetah-dase-td3", [*GYM, *SHARED, *RAY_ACTORS]),
    ("pursuit-small-pbt-super-ray", "pursuit-small-pbt-super", [*PURSUIT[1:], *ROUNDS, "backend.kind=ray"]),
]


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    # the relayrl the runs train with: ``python -m relayrl.cli`` imports it from the working
    # directory first (a worktree of the code before a change), this script from its install
    imported = [sys.executable, "-c", "import relayrl; print(relayrl.__file__)"]
    where = Path(subprocess.run(imported, capture_output=True, text=True, check=True).stdout.strip()).parent
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True).stdout.strip()
    # the package's own files only: recording rewrites the tracked results it compares
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "."], cwd=where, capture_output=True, text=True).stdout
    revision += " with uncommitted changes" if changed.strip() else ""
    from relayrl.experiment.run_dir import isa_limits

    limits = "".join(f", {name}={value}" for name, value in isa_limits().items())
    return (f"{cpu} ({torch.backends.cpu.get_cpu_capability()}{limits}); python {platform.python_version()}; "
            f"torch {torch.__version__}; relayrl at {revision or 'unknown'}")


def _chosen(cases: list[str] | None) -> list[tuple[str, str, list[str]]]:
    if cases is None:
        return CASES
    unknown = sorted(set(cases) - {case for case, _, _ in CASES})
    if unknown:
        raise SystemExit(f"unknown cases {unknown}: choose from {', '.join(case for case, _, _ in CASES)}")
    return [entry for entry in CASES if entry[0] in cases]


def record(label: str, out: Path, results: Path, cases: list[str] | None = None) -> None:
    target = results / label
    target.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Path] = {}
    for case, preset, overrides in _chosen(cases):
        root = out / case
        shutil.rmtree(root, ignore_errors=True)
        filled = [o.replace("{pretrained}", str(runs.get("battle-pretrain", ""))) for o in overrides]
        cmd = [sys.executable, "-m", "relayrl.cli", "train", preset, *filled, "--seed", "0", "--out", str(root)]
        print(f"{case}: {' '.join(cmd[3:])}", flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        (run_dir,) = [p.parent for p in root.glob("*/0/metrics.csv")]
        runs[case] = run_dir
        shutil.copy2(run_dir / "metrics.csv", target / f"{case}.csv")
    (target / "machine.txt").write_text(_machine() + "\n")
    print(f"wrote {target}")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k not in WALL_CLOCK} for row in csv.DictReader(handle)]


def _recorded(before: str, after: str, results: Path, cases: list[str] | None) -> list[str]:
    """The chosen cases (default: those recorded under both labels), refusing any one label lacks."""
    chosen = [case for case, _, _ in _chosen(cases)]
    both = [case for case in chosen if all((results / label / f"{case}.csv").is_file() for label in (before, after))]
    missing = [case for case in chosen if case not in both]
    if cases is not None and missing:
        raise SystemExit(f"cases {missing} are not recorded under both {before} and {after} in {results}: "
                         f"record them (`record LABEL --cases ...`) or leave them out of --cases")
    if not both:
        raise SystemExit(f"no case is recorded under both {before} and {after} in {results}")
    return both


def compare(before: str, after: str, results: Path, table: str = "table.md", cases: list[str] | None = None) -> bool:
    lines = [
        f"# Same numbers: {before} vs {after}",
        "",
        f"Machine of {before}: {(results / before / 'machine.txt').read_text().strip()}; "
        f"of {after}: {(results / after / 'machine.txt').read_text().strip()}. Every column but "
        f"{', '.join(sorted(WALL_CLOCK))} is compared, row by row.",
        "",
        "| case | rows | identical | first difference |",
        "|---|---:|---|---|",
    ]
    same_everywhere = True
    for case in _recorded(before, after, results, cases):
        old, new = _rows(results / before / f"{case}.csv"), _rows(results / after / f"{case}.csv")
        difference = ""
        if len(old) != len(new):
            difference = f"{len(old)} vs {len(new)} rows"
        for i, (a, b) in enumerate(zip(old, new)):
            keys = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
            if keys and not difference:
                k = sorted(keys)[0]
                difference = f"row {i} (env step {a.get('env_steps')}): {k} {a.get(k)} vs {b.get(k)}"
        same_everywhere &= not difference
        lines.append(f"| {case} | {len(old)} | {'yes' if not difference else 'no'} | {difference} |")
    (results / table).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return same_everywhere


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("label")
    rec.add_argument("--out", type=Path, default=None, help="root of the run directories (default: a temporary folder)")
    cmp = sub.add_parser("compare")
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.add_argument("--table", default="table.md", help="file name of the comparison under --results")
    for p in (rec, cmp):
        p.add_argument("--results", type=Path, default=Path("docs/results/same_numbers"))
        p.add_argument("--cases", nargs="+", help="these cases only (default: record all; compare those both labels have)")
    args = parser.parse_args()
    if args.command == "record":
        with tempfile.TemporaryDirectory() as tmp:
            record(args.label, args.out or Path(tmp), args.results, args.cases)
        return 0
    return 0 if compare(args.before, args.after, args.results, args.table, args.cases) else 1


if __name__ == "__main__":
    sys.exit(main())
