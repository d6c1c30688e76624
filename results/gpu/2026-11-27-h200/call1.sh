#!/bin/bash
# Next device call: the pipelined cohort (`--cohort-groups 2`, docs/agent.md, "Pipelined
# cohorts"), whose GPU speed is not measured yet. On a fresh GPU machine with the repo
# and its wheels in .whl/ (`make gpu-wheels`), from the repository root:
#   bash results/gpu/next/call.sh
# Steps, each under its own `timeout`, the whole inside DEADLINE (default 540) seconds,
# most important first:
#   1. `envgen gpu check` (versions, device tests, tiny PPO/AD runs, kill and resume);
#   2. the bench, paper network, bf16: one run, a cohort of 8, and a cohort of 8
#      pipelined in 2 groups, 3 timed rollouts each (bench_bf16_pipelined.log; the
#      pipelined entry's rollout_s shows the steady state apart from fill and drain);
#   3. pipeline_check.py: a pipelined cohort of 4 against its two groups trained one
#      after the other, float32 and bf16, deterministic kernels: the streams must change
#      no number (one JSON line per precision, "all_equal");
#   4. float32 (TF32 off, --deterministic): one run and the pipelined cohort of 8, 2 timed
#      rollouts, with what is left (bench_float32_pipelined.log); the unpipelined float32
#      cohort of 8 was measured in results/gpu/2026-11-26-h200 (1,702.6, call 3).
# Everything goes to $OUT. The measured rate of a pipelined cohort goes into
# envgen.gpu.plan.MEASURED_PIPELINED_COHORT_SPS only from these logs.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - T0) )); }
# a step's timeout: what is left less RESERVE for the steps after it, at most CAP, at least
# 1 (`timeout 0` would mean no limit)
cap() { local t=$(( $(left) - $1 )); t=$(( t > $2 ? $2 : t )); echo $(( t < 1 ? 1 : t )); }
exec > >(tee $OUT/call.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
git log -1 --format=%H 2>/dev/null
python3 -c "import torch, numpy; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), numpy.__version__)"
echo "== gpu check; $(left) s left"
timeout $(cap 0 150) python3 -m envgen.cli gpu check --out $OUT/check
echo "rc $?"
B="python3 -m envgen.cli bench train --device cuda --model paper --no-reference --concurrency 1"
quiet() { grep -v -e 'step/s' -e '^\s*$'; }
T=$(cap 180 180)
echo "== bench bf16: 1 run, cohort 8 in 1 and 2 groups, 3 rollouts; $(left) s left, timeout $T"
timeout $T $B --bf16 --rollouts 3 --cohort ${COHORTS:-8} --cohort-groups 1,2 2>&1 | quiet > $OUT/bench_bf16_pipelined.log
echo "rc ${PIPESTATUS[0]}"; tail -4 $OUT/bench_bf16_pipelined.log
T=$(cap 100 90)
echo "== pipeline check (pipelined cohort of 4 vs its groups one after the other); $(left) s left, timeout $T"
timeout $T python3 results/gpu/next/pipeline_check.py > $OUT/pipeline_check.log 2>&1
echo "rc $?"; grep '^{' $OUT/pipeline_check.log || tail -5 $OUT/pipeline_check.log
T=$(cap 10 600)
echo "== bench float32: 1 run, cohort 8 in 2 groups, 2 rollouts; $(left) s left, timeout $T"
timeout $T $B --deterministic --rollouts 2 --cohort 8 --cohort-groups 2 2>&1 | quiet > $OUT/bench_float32_pipelined.log
echo "rc ${PIPESTATUS[0]}"; tail -4 $OUT/bench_float32_pipelined.log
ls -la $OUT
echo "== end, $(left) s left"
