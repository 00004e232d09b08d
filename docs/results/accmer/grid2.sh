#!/usr/bin/env bash
# a second stream over issue 20's remaining cells, from the same pinned worktree: the
# no-punishment setting's seeds (the first stream takes them in the same order; a run locked
# by one stream is waited for by the other)
cd /work/accmer
export PYTHONPATH=/work/accmer
python -m relayrl.cli reproduce accmer --settings base --seeds 3 --jobs 1 --out /work/runs/accmer --results /work/runs/accmer_results2
