#!/usr/bin/env bash
# Tier 1 of the SUPER grid: seed 2, then seed 0 again from 0 (its checkpoints were lost with the machine of 2026-11-23).
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
chain() {  # preset: seeds 2 then 0; SIGTERM stops the running seed (it saves a checkpoint) and starts no other
  local child=""
  trap '[ -n "$child" ] && kill -TERM $child 2>/dev/null; wait; exit 143' TERM INT
  for seed in 2 0; do  # seed 1 finished both presets at 800k
    run_one $1 $seed
    child=$!
    wait $child || exit $?
  done
}
chain pursuit-ddqn &
chain pursuit-super-quantile &
trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; exit 143' TERM INT
wait
