#!/bin/bash
# Device call of 2026-11-27 (evening): the pipelined cohort's steady state, which
# results/gpu/2026-11-27-h200 left unmeasured (its 8-rollout entry did not finish). From
# the repository root of a GPU machine with .whl/ carried (`make gpu-wheels`):
#   DEADLINE=540 bash results/gpu/next/call.sh
# 1. bf16, paper network, 8 timed rollouts: one run, then pipelined cohorts (2 groups) of
#    4 and 8 (a cohort of 4 that finishes 1M steps per seed inside one call needs about
#    7.4k env steps/s, docs/agent.md);
# 2. with what is left: a pipelined cohort of 16, 6 timed rollouts.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - T0) )); }
cap() { local t=$(( $(left) - $1 )); t=$(( t > $2 ? $2 : t )); echo $(( t < 1 ? 1 : t )); }
exec > >(tee $OUT/call.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
python3 -c "import torch, numpy; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), numpy.__version__)"
B="python3 -m envgen.cli bench train --device cuda --model paper --no-reference --concurrency 1 --bf16"
quiet() { grep -v -e 'step/s' -e '^\s*$'; }
T=$(cap 150 330)
echo "== bench bf16: 1 run, pipelined cohorts of 4 and 8, 8 rollouts; $(left) s left, timeout $T"
timeout $T $B --rollouts 8 --cohort 4,8 --cohort-groups 2 2>&1 | quiet > $OUT/bench_bf16_pipelined_steady.log
echo "rc ${PIPESTATUS[0]}"; tail -4 $OUT/bench_bf16_pipelined_steady.log
T=$(cap 5 240)
echo "== bench bf16: pipelined cohort of 16, 6 rollouts; $(left) s left, timeout $T"
timeout $T $B --rollouts 6 --cohort 16 --cohort-groups 2 2>&1 | quiet > $OUT/bench_bf16_pipelined_16.log
echo "rc ${PIPESTATUS[0]}"; tail -4 $OUT/bench_bf16_pipelined_16.log
echo "== done; $(left) s left"
