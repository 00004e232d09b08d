#!/usr/bin/env bash
# issue 20's minimum runs from the pinned worktree, seed 0 of every cell first: the hard
# setting's AccMER (to finish beside its MAC-PO), the hard setting with a stag worth 10 (the
# reference config's), the no-punishment setting, the hard setting's QMIX; then seeds 1 and 2.
cd /work/accmer
export PYTHONPATH=/work/accmer
R="--jobs 1 --out /work/runs/accmer --results /work/runs/accmer_results"
python -m relayrl.cli reproduce accmer --settings hard --algos accmer --seeds 1 $R
python -m relayrl.cli reproduce accmer --settings hard10 base --seeds 1 $R
python -m relayrl.cli reproduce accmer --settings hard --algos qmix --seeds 1 $R
python -m relayrl.cli reproduce accmer --settings hard10 base hard --seeds 3 $R
