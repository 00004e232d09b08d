#!/usr/bin/env bash
# issue 20's last four minimum runs (no punishment: QMIX seeds 1 and 2, MAC-PO and AccMER seed
# 2), two at a time, from a worktree pinned at c935448, after the machine that held the earlier
# checkpoints was replaced (QMIX seed 1 had reached 820k there; it starts again from 0).
# `reproduce accmer --settings base --seeds 3` would also retrain the seeds already complete,
# whose checkpoints went with that machine, so the grid is given these four jobs by name. The
# shorter QMIX runs go first, so that a session ending mid-way leaves whole runs behind.
cd /work/accmer
export PYTHONPATH=/work/accmer
python - <<'PY'
from pathlib import Path
from relayrl.experiment.grid import Job, collect, run_grid
jobs = [Job("predator-prey-qmix", 1, 1_000_000), Job("predator-prey-qmix", 2, 1_000_000),
        Job("predator-prey-macpo", 2, 1_000_000), Job("predator-prey-accmer", 2, 1_000_000)]
root = Path("/work/runs/accmer")
print(run_grid(jobs, root, parallel=2), flush=True)
collect(jobs, root, Path("/work/runs/accmer_results"))
PY
