#!/usr/bin/env bash
# Tier 1 of the SUPER grid: the seeds named as arguments (default: 0, the one still missing), one after the other.
# Same CLI calls the grid makes (relayrl/experiment/grid.py: command), from the pinned worktree;
# a run with a checkpoint is resumed, otherwise started. Each preset runs its seeds one after
# the other on its own core, so a preset that finishes first does not leave a core idle.
cd /work/repro && . .venv/bin/activate
run_one() {  # preset seed: the run, in the background of the calling shell
  local dir
  dir=$(ls -d /work/runs/$1-*/$2 2>/dev/null | head -n 1)
  if [ -n "$dir" ] && [ -n "$(ls "$dir/checkpoints" 2>/dev/null)" ]; then
    python -m relayrl.cli resume "$dir" total_steps=800000 checkpoint_interval=25000 >> /work/runs/logs/$1-s$2.log 2>&1 &
  else
    python -m relayrl.cli train $1 total_steps=800000 checkpoint_interval=25000 --seed $2 --out /work/runs >> /work/runs/logs/$1-s$2.log 2>&1 &
  fi
}
SEEDS=${*:-0}  # seeds 1 and 2 finished both presets at 800k
chain() {  # preset: its seeds in turn; SIGTERM stops the running seed (it saves a checkpoint) and starts no other
  local child=""
  trap '[ -n "$child" ] && kill -TERM $child 2>/dev/null; wait; exit 143' TERM INT
  for seed in $SEEDS; do
    run_one $1 $seed
    child=$!
    wait $child || exit $?
  done
}
chain pursuit-ddqn &
chain pursuit-super-quantile &
trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; exit 143' TERM INT
wait
