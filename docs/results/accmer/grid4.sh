#!/usr/bin/env bash
# issue 20's last two minimum runs (no punishment: MAC-PO and AccMER seed 2), side by side,
# from a worktree pinned at c935448 (the code of grid3.sh). The machine that held grid3.sh's
# checkpoints (these two at 840k and 820k env steps) was replaced between sessions, so they
# start again from 0; QMIX's seeds 1 and 2 are complete and committed, so they are not named.
cd /work/accmer
export PYTHONPATH=/work/accmer
python - <<'PY'
from pathlib import Path
from relayrl.experiment.grid import Job, collect, run_grid
jobs = [Job("predator-prey-macpo", 2, 1_000_000), Job("predator-prey-accmer", 2, 1_000_000)]
root = Path("/work/runs/accmer")
print(run_grid(jobs, root, parallel=2), flush=True)
collect(jobs, root, Path("/work/runs/accmer_results"))
PY
