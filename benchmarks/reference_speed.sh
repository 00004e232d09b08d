#!/usr/bin/env bash
# QMIX, MAC-PO or AccMER on Predator-Prey: the public reference code against relayrl, same
# settings, same machine, one after the other; prints env steps/s of each.
#
#   bash benchmarks/reference_speed.sh ALGO CHECKOUT PYTHON [ENV_STEPS] [BUFFER_EPISODES]
#
# ALGO qmix: CHECKOUT is a clone of hijkzzz/pymarl2 (measured at 8ccac7c), run with its
#   `qmix_predator_prey` + `stag_hunt` configs (replay 1,000 episodes, TD(lambda) 0.5),
#   against relayrl's `predator-prey-qmix`.
# ALGO macpo or accmer: CHECKOUT is the AccMER code (kailashg26/AccMER, the folder in its
#   accmer.zip), run with its `ow_qmix` + `p_stag_hunt` configs (the max_q_learner with
#   MAC-PO's weights, TD(lambda) 0.6) at miscapture -1.5, against relayrl's
#   `predator-prey-hard10-{macpo,accmer}`. The code as published always samples with its
#   reuse rule (AccMER); for macpo one edit puts back the uniform draw it has commented out.
# Both: 8 predators, 8 stags worth 10, 8 envs (the references: in parallel processes), batch
# 128 episodes, one update per 8 episodes, Adam 1e-3, targets every 200 episodes, epsilon
# 1.0 -> 0.05 over 100k steps, walls not observed; the replay holds BUFFER_EPISODES (default
# 1,000: the references allocate the whole replay up front, 10,000 episodes of 8 predators
# would take about 8 GB).
#
# PYTHON: a Python with the references' requirements (torch, sacred, pyyaml, scipy, pygame,
# matplotlib, tensorboard-logger, setuptools < 70 for sacred's pkg_resources). Four edits let
# them start without StarCraft II and with today's packages; they touch no part of the
# training path:
#   - envs/__init__.py, run/run.py, run/per_run.py: the StarCraft II import becomes optional;
#   - main.py: yaml.load gets a Loader, collections.Mapping becomes collections.abc.Mapping.
set -euo pipefail
algo=$1 checkout=$(realpath "$2") python=$3 steps=${4:-60000} buffer=${5:-1000}
relayrl_dir=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

case $algo in
  qmix) reference=(--config=qmix_predator_prey --env-config=stag_hunt with buffer_size="$buffer")
        ours=(predator-prey-qmix env.settings.reward_stag=10 qmix.td_lambda=0.5) ;;
  macpo|accmer) reference=(--config=ow_qmix --env-config=p_stag_hunt with env_args.miscapture_punishment=-1.5 batch_size=128 buffer_size="$buffer")
        ours=(predator-prey-hard10-$algo) ;;
  *) echo "ALGO must be qmix, macpo or accmer, got '$algo'" >&2; exit 2 ;;
esac

cd "$checkout"
sed -i 's/^from \.starcraft import StarCraft2Env$/try:\n    from .starcraft import StarCraft2Env\nexcept ImportError:\n    StarCraft2Env = None/' src/envs/__init__.py
sed -i 's/^from smac.env import StarCraft2Env$/StarCraft2Env = None/' src/run/run.py src/run/per_run.py
sed -i 's/yaml.load(f)$/yaml.load(f, Loader=yaml.FullLoader)/; s/collections.Mapping/collections.abc.Mapping/; s/^import collections$/import collections\nimport collections.abc/' src/main.py
if [ "$algo" = macpo ]; then  # the reference's own uniform draw, in place of its reuse rule
  sed -i 's/^\( *\)ep_ids = np.concatenate((batch_part_one, batch_part_two))$/\1ep_ids = np.random.choice(self.episodes_in_buffer, batch_size, replace=False)/' src/components/episode_buffer.py
  grep -q "ep_ids = np.random.choice(self.episodes_in_buffer, batch_size, replace=False)$" src/components/episode_buffer.py
fi

start=$(date +%s.%N)
"$python" src/main.py "${reference[@]}" use_cuda=False t_max="$steps" \
    test_interval=10000000 log_interval=1000 runner_log_interval=1000 learner_log_interval=1000 \
    local_results_path="$out/reference" > "$out/reference.log" 2>&1
theirs=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
their_steps=$(grep -o "t_env: *[0-9]*" "$out/reference.log" | tail -n 1 | grep -o "[0-9]*$")

cd "$relayrl_dir"
start=$(date +%s.%N)
python -m relayrl.cli train "${ours[@]}" total_steps="$steps" env.num_envs=8 env.settings.observe_walls=false \
    qmix.batch_size=128 qmix.buffer_size="$buffer" qmix.updates_per_episode=0.125 qmix.epsilon_start=1.0 \
    eval.interval=0 report_interval="$steps" checkpoint_interval="$steps" --out "$out/relayrl" > "$out/relayrl.log" 2>&1
mine=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
updates=$(python3 -c "import csv,glob,sys; r=list(csv.DictReader(open(glob.glob(sys.argv[1]+'/*/0/metrics.csv')[0]))); print(r[-1]['updates'])" "$out/relayrl")

python3 - "$algo" "$steps" "$theirs" "$mine" "$their_steps" "$updates" <<'PY'
import sys
algo, steps, theirs, mine, their_steps, updates = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5] or 0), sys.argv[6]
print("| implementation | env steps | wall s | env steps/s |")
print("|---|---:|---:|---:|")
print(f"| reference {algo} (8 env processes) | {their_steps:,} | {theirs:.1f} | {their_steps / theirs:.0f} |")
print(f"| relayrl {algo} (8 copies, one process; {updates} updates) | {steps:,} | {mine:.1f} | {steps / mine:.0f} |")
print(f"relayrl / reference env steps/s: {(steps / mine) / (their_steps / theirs):.2f}")
PY
