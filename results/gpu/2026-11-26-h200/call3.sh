#!/bin/bash
# Third device call for issue 39: the cohort with its policy step in a CUDA graph and its
# update one seed at a time (after probe.log): graph-vs-eager check, then the bench.
exec > >(tee $OUT/call3.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 40 python3 results/gpu/2026-11-26-h200/graph_check.py; echo "rc $?"
B="python3 -m envgen.cli bench train --device cuda --model paper --no-reference"
quiet() { grep -v -e 'step/s' -e '^\s*$'; }
timeout 95 $B --bf16 --concurrency 1 --rollouts 1 --cohort 8,16 2>&1 | quiet > $OUT/bench_bf16_graphed.log
echo "rc ${PIPESTATUS[0]}"; tail -4 $OUT/bench_bf16_graphed.log
timeout 70 $B --deterministic --concurrency 1 --rollouts 1 --cohort 8 2>&1 | quiet > $OUT/bench_float32_graphed.log
echo "rc ${PIPESTATUS[0]}"; tail -3 $OUT/bench_float32_graphed.log
