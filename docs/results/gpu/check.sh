#!/usr/bin/env bash
# relayrl on a CUDA machine: the test suite with device=auto (CUDA) and Battle pretraining
# speed on the GPU against the CPU, in one call of a lent machine (Python 3.12, its own
# CUDA torch; relayrl's other dependencies carried as wheels in .whl/).
# Run from the repository root; results go to $OUT (default /tmp/gpu-check).
set -u
OUT=${OUT:-/tmp/gpu-check}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . || {
  export PYTHONPATH=$PWD; mkdir -p /tmp/bin; printf '#!/bin/sh\nexec python3 -m relayrl.cli "$@"\n' > /tmp/bin/relayrl
  chmod +x /tmp/bin/relayrl; export PATH=/tmp/bin:$PATH; }
{ nvidia-smi -L; nproc; python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())"; } | tee "$OUT/machine.txt"
# Battle pretraining (12 DQN agents, two teams, conv nets), updates from step 500 on (SPEED=0 skips it).
[ "${SPEED:-1}" = 1 ] && for dev in cpu cuda; do
  timeout 170 relayrl train battle-pretrain total_steps=2500 dqn.learning_starts=500 dqn.buffer_size=5000 \
    report_interval=500 device=$dev --out /tmp/speed-$dev > "$OUT/battle-$dev.log" 2>&1 &
done
wait
[ "${SPEED:-1}" = 1 ] && tail -n 4 "$OUT"/battle-*.log
# The whole default suite, device=auto resolving to CUDA in every run it trains.
timeout ${SUITE_TIMEOUT:-290} python3 -m pytest -q -n 16 -p no:cacheprovider tests -rfE -o addopts="-m 'not slow'" \
  --junitxml="$OUT/junit.xml" > "$OUT/pytest.log" 2>&1
echo "pytest rc $?"; tail -n 60 "$OUT/pytest.log"
