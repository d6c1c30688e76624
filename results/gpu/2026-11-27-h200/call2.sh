#!/bin/bash
# Second device call of 2026-11-27 (the same warm H200), as run (one line there):
# pipeline_check.py after its fix (its training under `if __name__ == "__main__"`), then
# the bf16 pipelined bench with 8 timed rollouts for a steady state (timed out: see README).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
exec > >(tee $OUT/call2.log) 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== pipeline check"
timeout 170 python3 results/gpu/next/pipeline_check.py > $OUT/pipeline_check.log 2>&1
echo "rc $?"; grep '^{' $OUT/pipeline_check.log || tail -5 $OUT/pipeline_check.log
echo "== bench bf16 steady state: cohort 8 in 1 and 2 groups, 8 rollouts"
timeout 150 python3 -m envgen.cli bench train --device cuda --model paper --no-reference \
  --concurrency 1 --bf16 --rollouts 8 --cohort 8 --cohort-groups 1,2 2>&1 \
  | grep -v -e 'step/s' -e '^\s*$' > $OUT/bench_bf16_pipelined_8rollouts.log
echo "rc ${PIPESTATUS[0]}"; tail -3 $OUT/bench_bf16_pipelined_8rollouts.log
