#!/usr/bin/env bash
# issue 20's grids from the pinned worktree: the small setting's MAC-PO and AccMER again (MAC-PO's Q* changed), then the minimum runs
cd /work/accmer
export PYTHONPATH=/work/accmer
python -m relayrl.cli reproduce accmer --settings small --algos macpo accmer --seeds 3 --jobs 1 --out /work/runs/accmer --results /work/runs/accmer_results
python -m relayrl.cli reproduce accmer --settings hard base --seeds 3 --jobs 1 --out /work/runs/accmer --results /work/runs/accmer_results
