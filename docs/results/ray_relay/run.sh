#!/usr/bin/env bash
cd "$(dirname "$0")/../../.."  # the repository
for seed in 0 1 2; do for v in apart relay; do
  python -m relayrl.cli train docs/results/ray_relay/$v.yaml seed=$seed --out docs/results/ray_relay/runs
done; done
