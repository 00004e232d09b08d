#!/usr/bin/env bash
# MARL speed on a lent GPU machine (issue 41), one call: relayrl's QMIX and MAPPO at
# JaxMARL's configs with the learners on CUDA beside JaxMARL's own scripts on the same GPU,
# the scaling table on the CPU (two cores of its own) and on CUDA, and independent runs
# over the cores. Carried: .gpuwhl/ (relayrl's dependencies missing from the image),
# .whl/jaxmarl/ (JaxMARL's) and .jaxmarl/ (JaxMARL's repository at the commit in its
# PROVENANCE). Results go to $OUT.
set -u
OUT=${OUT:-/tmp/gpu-marl}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpuwhl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/jaxsite .whl/jaxmarl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
printf '#!/bin/sh\nPYTHONPATH=/tmp/jaxsite:%s/.jaxmarl exec python3 "$@"\n' "$PWD" > /tmp/jaxpython; chmod +x /tmp/jaxpython
pin() { if command -v taskset > /dev/null; then taskset -c "$@"; else shift; "$@"; fi; }
{ nvidia-smi -L; nproc; python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())";
  /tmp/jaxpython -c "import jax; print('jax', jax.__version__, jax.devices())"; } 2>&1 | tee "$OUT/machine.txt"
# 1. the comparison on the GPU, and the CPU scaling table on two cores of its own
pin 14,15 timeout ${CPU_S:-240} python3 -m relayrl.cli bench --quick --only marl-scaling --device cpu > "$OUT/scaling-cpu.md" 2>&1 &
pin 0-11 timeout ${GPU_S:-240} python3 -m relayrl.cli bench --quick --only marl --device cuda \
  --jaxmarl-python /tmp/jaxpython --jaxmarl-src "$PWD/.jaxmarl" > "$OUT/marl-cuda.md" 2>&1
echo "marl rc $?"; tail -n 25 "$OUT/marl-cuda.md"
wait; tail -n 32 "$OUT/scaling-cpu.md"
# 2. independent runs over the cores (one thread each)
timeout ${PAR_S:-100} python3 -c "from relayrl.bench.marl import parallel_rates; print(parallel_rates((1, 4, 16), steps=10_000))" > "$OUT/parallel.md" 2>&1
echo "parallel rc $?"; cat "$OUT/parallel.md"
# 3. the scaling table with the learners on CUDA
timeout ${SCALE_S:-140} python3 -m relayrl.cli bench --quick --only marl-scaling --device cuda > "$OUT/scaling-cuda.md" 2>&1
echo "scaling rc $?"; tail -n 32 "$OUT/scaling-cuda.md"
