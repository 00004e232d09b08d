#!/usr/bin/env bash
# Tier 1 of the SUPER grid: seed 2, then seed 0 again from 0 (its checkpoints were lost with the machine of 2026-11-23).
# Same CLI calls the grid makes (relayrl/experiment/grid.py: command), from the pinned worktree;
# a run with a checkpoint is resumed, otherwise started.
cd /work/repro && . .venv/bin/activate
trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; exit 143' TERM INT  # stop: the runs save a checkpoint, nothing new starts
run_one() {  # preset seed
  local dir
  dir=$(ls -d /work/runs/$1-*/$2 2>/dev/null | head -n 1)
  exec >> /work/runs/logs/$1-s$2.log 2>&1
  # exec: the job is python itself, so the trap's SIGTERM reaches it and it saves a checkpoint
  if [ -n "$dir" ] && [ -n "$(ls "$dir/checkpoints" 2>/dev/null)" ]; then
    exec python -m relayrl.cli resume "$dir" total_steps=800000 checkpoint_interval=25000
  else
    exec python -m relayrl.cli train $1 total_steps=800000 checkpoint_interval=25000 --seed $2 --out /work/runs
  fi
}
for seed in 2 0; do  # seed 1 finished both presets at 800k; seed 0 restarts from 0 (its checkpoints were lost)
  for preset in pursuit-ddqn pursuit-super-quantile; do
    run_one $preset $seed &
  done
  wait
done
