#!/usr/bin/env bash
# a second stream over issue 20's remaining cells, from the same pinned worktree: the hard
# setting with a stag worth 10, seed 2 (the first stream takes the no-punishment cells; locked
# runs are waited for)
cd /work/accmer
export PYTHONPATH=/work/accmer
python -m relayrl.cli reproduce accmer --settings hard10 --seeds 3 --jobs 1 --out /work/runs/accmer --results /work/runs/accmer_results2
