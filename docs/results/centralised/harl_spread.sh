#!/usr/bin/env bash
# MADDPG, MATD3 and MASAC at HARL's MPE settings on mpe2's continuous simple_spread
# (the spread-continuous-* presets, 5M env steps), 3 seeds, one run after the other:
# seed 0 of each algorithm first. A run with a checkpoint is resumed (relayrl train does),
# a complete one is skipped. SIGTERM stops the running one (it saves a checkpoint) and
# starts no other. Usage: harl_spread.sh RELAYRL_CHECKOUT RUNS_ROOT [seeds...]
set -u
# Started with setsid, the lane is a scheduling group (autogroup) of its own, and Linux shares
# the CPU equally between groups whatever their processes' nice: lower the group's weight too.
echo 19 > /proc/self/autogroup 2>/dev/null || true
cd "$1" || exit 2
RUNS=$2
shift 2
SEEDS=${*:-0 1 2}
mkdir -p "$RUNS/logs"
child=""
trap '[ -n "$child" ] && kill -TERM $child 2>/dev/null; wait; exit 143' TERM INT
for seed in $SEEDS; do
  for algo in matd3 maddpg masac; do
    python -m relayrl.cli train spread-continuous-$algo checkpoint_interval=100000 --seed "$seed" --out "$RUNS" \
      >> "$RUNS/logs/spread-continuous-$algo-s$seed.log" 2>&1 &
    child=$!
    wait $child || exit $?
  done
done
