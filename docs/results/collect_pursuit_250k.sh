#!/usr/bin/env bash
# Copies the metrics of the 250k Pursuit evidence runs into docs/results/pursuit_250k/ and
# regenerates the curves (mean +- std over the seeds present) and the table from those copies.
# Runs were made with:
#   relayrl train pursuit-ddqn           total_steps=250000 checkpoint_interval=25000 --seed S --out RUNS
#   relayrl train pursuit-super-quantile total_steps=250000 checkpoint_interval=25000 --seed S --out RUNS
set -euo pipefail
runs=${1:?usage: collect_pursuit_250k.sh RUNS_ROOT}
out=$(dirname "$0")/pursuit_250k
for experiment in "$runs"/pursuit-ddqn-* "$runs"/pursuit-super-quantile-*; do
  for seed_dir in "$experiment"/*/; do
    [ -f "$seed_dir/metrics.csv" ] || continue
    # seeds still early in training are left out until they pass 100k env steps
    last=$(tail -n 1 "$seed_dir/metrics.csv" | cut -d, -f1)
    [ "$last" -ge 100000 ] 2>/dev/null || continue
    dest="$out/$(basename "$experiment")/$(basename "$seed_dir")"
    mkdir -p "$dest"
    # the first 250k steps only (the same runs continue to 800k for docs/results/super)
    awk -F, 'NR == 1 || $1 <= 250000' "$seed_dir/metrics.csv" > "$dest/metrics.csv"
    cp "$seed_dir/config.yaml" "$dest/"
  done
done
experiments=("$out"/pursuit-ddqn-* "$out"/pursuit-super-quantile-*)
relayrl plot "${experiments[@]}" --out "$out/training_reward.png" --bin 8000 --alpha 0.3
relayrl plot "${experiments[@]}" --out "$out/eval_reward.png" --key eval_reward_mean --bin 8000 --alpha 0
relayrl table "${experiments[@]}" --at 248000 --bin 8000 > "$out/table_250k.md"
