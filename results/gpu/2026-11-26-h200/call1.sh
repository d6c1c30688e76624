#!/bin/bash
# One device call for issue 39: the cohort bench in float32 (TF32 off) and bf16 against
# today's trainer at 1 and 8 runs, then the precision A/B of item 5 (4 seeds, float32 vs
# bf16, each as one cohort of 4), sized from the bench's rates to end inside the call.
# Run as `DEADLINE=560 bash results/gpu/2026-11-26-h200/call1.sh`; everything goes to $OUT.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
exec > >(tee $OUT/session.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; git log -1 --format=%H 2>/dev/null
python3 -c "import torch, numpy, scipy; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), numpy.__version__, scipy.__version__)"
B="python3 -m envgen.cli bench train --device cuda --model paper --no-reference"
quiet() { grep -v -e 'step/s' -e '^\s*$'; }
echo "== bench float32 (deterministic, TF32 off): 1 and 8 runs, cohort 8; $(left) s left"
timeout 200 $B --deterministic --concurrency 1,8 --rollouts 1 --cohort 8 2>&1 | quiet > $OUT/bench_float32.log
echo "rc ${PIPESTATUS[0]}"; tail -6 $OUT/bench_float32.log
echo "== bench bf16: 1 run, cohorts 8 and 16; $(left) s left"
timeout 110 $B --bf16 --concurrency 1 --rollouts 2 --cohort 8,16 2>&1 | quiet > $OUT/bench_bf16.log
echo "rc ${PIPESTATUS[0]}"; tail -6 $OUT/bench_bf16.log
# A/B length: both arms (4 seeds each) inside what is left, from the cohort-8 rates
# (a cohort of 4 runs slower per step; 0.6 of the cohort-8 rate is assumed), 40 s reserve.
STEPS=$(python3 - "$(left)" <<'PY'
import json, sys
left = float(sys.argv[1])
def rate(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])["cohorts"][0]["cohort_sps"]
    except Exception:
        return None
r32, r16 = rate(f"{__import__('os').environ['OUT']}/bench_float32.log"), rate(f"{__import__('os').environ['OUT']}/bench_bf16.log")
r32, r16 = 0.6 * (r32 or 1500.0), 0.6 * (r16 or 3000.0)
steps = (left - 100) / (4 / r32 + 4 / r16)
print(max(4096, min(400_000, int(steps) // 4096 * 4096)))
PY
)
echo "== A/B float32 vs bf16, 4 seeds, $STEPS steps each; $(left) s left"
timeout $(( $(left) - 20 )) python3 -m envgen.cli bench precision --device cuda --model paper \
  --modes float32,bf16 --seeds 100,101,102,103 --steps $STEPS --out /tmp/ab 2>&1 | quiet > $OUT/ab.log
echo "rc ${PIPESTATUS[0]}"; tail -3 $OUT/ab.log
tar czf $OUT/ab-logs.tar.gz -C /tmp ab 2>/dev/null; ls -la $OUT
nvidia-smi --query-gpu=memory.used --format=csv
echo "== end, $(left) s left"
