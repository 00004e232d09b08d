#!/usr/bin/env bash
# QMIX on Predator-Prey: pymarl2 (the public code the MAC-PO and AccMER references build on)
# against relayrl, same settings, same machine, one after the other; prints env steps/s of each.
#
#   bash benchmarks/pymarl2_qmix_speed.sh PYMARL2_CHECKOUT PYMARL2_PYTHON [ENV_STEPS]
#
# PYMARL2_CHECKOUT: a clone of hijkzzz/pymarl2 (measured at 8ccac7c); PYMARL2_PYTHON: a Python
# with its requirements (torch, sacred, pyyaml, scipy, pygame, matplotlib, tensorboard-logger,
# setuptools < 70 for sacred's pkg_resources). Four edits let it start without StarCraft II and
# with today's packages; they touch no part of the training path:
#   - envs/__init__.py, run/run.py, run/per_run.py: the StarCraft II import becomes optional;
#   - main.py: yaml.load gets a Loader, collections.Mapping becomes collections.abc.Mapping.
# pymarl2's config `qmix_predator_prey` + `stag_hunt`: 8 envs in parallel processes, batch 128
# episodes, replay 1,000 episodes, one update per 8 episodes, Adam 1e-3, TD(lambda) 0.5,
# targets every 200 episodes, epsilon 1.0 -> 0.05 over 100k steps, a stag worth 10, walls not
# observed; relayrl runs the same (one process, 8 copies stepped as arrays, 1 torch thread).
set -euo pipefail
checkout=$(realpath "$1") python=$2 steps=${3:-60000}
relayrl_dir=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cd "$checkout"
sed -i 's/^from \.starcraft import StarCraft2Env$/try:\n    from .starcraft import StarCraft2Env\nexcept ImportError:\n    StarCraft2Env = None/' src/envs/__init__.py
sed -i 's/^from smac.env import StarCraft2Env$/StarCraft2Env = None/' src/run/run.py src/run/per_run.py
sed -i 's/yaml.load(f)$/yaml.load(f, Loader=yaml.FullLoader)/; s/collections.Mapping/collections.abc.Mapping/; s/^import collections$/import collections\nimport collections.abc/' src/main.py

start=$(date +%s.%N)
"$python" src/main.py --config=qmix_predator_prey --env-config=stag_hunt with use_cuda=False t_max="$steps" \
    test_interval=10000000 log_interval=1000 runner_log_interval=1000 learner_log_interval=1000 \
    local_results_path="$out/pymarl2" > "$out/pymarl2.log" 2>&1
pymarl2=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
done_steps=$(grep -o "t_env: *[0-9]*" "$out/pymarl2.log" | tail -n 1 | grep -o "[0-9]*$")

cd "$relayrl_dir"
start=$(date +%s.%N)
python -m relayrl.cli train predator-prey-qmix total_steps="$steps" env.num_envs=8 env.settings.reward_stag=10 \
    env.settings.observe_walls=false qmix.batch_size=128 qmix.buffer_size=1000 qmix.td_lambda=0.5 \
    qmix.updates_per_episode=0.125 qmix.epsilon_start=1.0 eval.interval=0 report_interval="$steps" \
    checkpoint_interval="$steps" --out "$out/relayrl" > "$out/relayrl.log" 2>&1
ours=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
updates=$(python3 -c "import csv,glob,sys; r=list(csv.DictReader(open(glob.glob(sys.argv[1]+'/*/0/metrics.csv')[0]))); print(r[-1]['updates'])" "$out/relayrl")

python3 - "$steps" "$pymarl2" "$ours" "$done_steps" "$updates" <<'EOF'
import sys
steps, pymarl2, ours, pymarl2_steps, updates = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4] or 0), sys.argv[5]
print(f"| implementation | env steps | wall s | env steps/s |")
print(f"|---|---:|---:|---:|")
print(f"| pymarl2 QMIX (8 env processes) | {pymarl2_steps:,} | {pymarl2:.1f} | {pymarl2_steps / pymarl2:.0f} |")
print(f"| relayrl QMIX (8 copies, one process; {updates} updates) | {steps:,} | {ours:.1f} | {steps / ours:.0f} |")
print(f"relayrl / pymarl2 env steps/s: {(steps / ours) / (pymarl2_steps / pymarl2):.2f}")
EOF
