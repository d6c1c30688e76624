#!/bin/bash
# Call A of the prepared GPU session (issue 53): the cohort's kernel modes checked on the
# device, then the rate of each mode against the one-run baseline in the same call.
# From the repository root of a GPU machine with .whl/ carried (`make gpu-wheels`):
#   DEADLINE=390 bash results/gpu/next/callA.sh
# (`envgen gpu dry-run` plans each step's seconds: the bench keeps 300 s, a cold compile
# of the compile cohort included; the kernel checks get the rest.)
# Writes $OUT/callA.log, $OUT/kernel_checks.json, $OUT/bench_kernels.log, $OUT/rate.json.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-390} - ($(date +%s) - T0) )); }
exec > >(tee $OUT/callA.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
python3 -c "import torch, numpy; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), numpy.__version__)"
E="python3 -m envgen.cli"
echo "== 1. kernel checks of graph mode, cohorts of 4 and 8, float32 and bf16; $(left) s left"
timeout $(( $(left) - 300 )) $E gpu probe kernels --device cuda --sizes 4,8 --kernels graph --out $OUT
echo "rc $?"
echo "== 2. bf16 rates: one run, then cohorts of 4 in each mode, 3 timed rollouts; $(left) s left"
timeout $(( $(left) - 5 )) $E bench train --device cuda --model paper --bf16 --deterministic \
  --no-reference --concurrency 1 --rollouts 3 --cohort 4 --kernels eager,graph,compile \
  2>&1 | grep -v -e 'step/s' -e '^\s*$' > $OUT/bench_kernels.log
echo "rc ${PIPESTATUS[0]}"; tail -5 $OUT/bench_kernels.log
$E gpu probe rate $OUT/bench_kernels.log --out $OUT/rate.json
echo "== done; $(left) s left"
