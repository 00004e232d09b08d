#!/usr/bin/env bash
# 3 seeds of each: the shared replay between two learner actors, one DASE learner, the two apart
cd "$(dirname "$0")/../../.."  # the repository
for seed in 0 1 2; do for v in shared one apart; do
  python -m relayrl.cli train docs/results/ray_shared_replay/$v.yaml seed=$seed --out docs/results/ray_shared_replay/runs
done; done
