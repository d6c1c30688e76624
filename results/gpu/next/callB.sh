#!/bin/bash
# Call B of the prepared GPU session (issue 53): Table 1's PPO row (1M steps per seed) as
# one cohort at the rate call A measured, sealed inside this call, packed for
# `envgen gpu import`. Runs on a fresh machine too (its own set-up). Before sending it,
# copy call A's rate.json to results/gpu/next/rate.json; SEEDS are the cohort to train
# (the next W seeds of the row not yet in results/runs; W is the rate file's):
#   SEEDS=0,1,2,3 DEADLINE=595 bash results/gpu/next/callB.sh   (run timeout_s 600)
# `envgen gpu run` starts a cohort only if it finishes inside --budget-min at --sps, and
# packs only sealed runs (no checkpoints). Writes $OUT/callB.log and $OUT/runs-*.tar.gz.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-595} - ($(date +%s) - T0) )); }
exec > >(tee $OUT/callB.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv
E="python3 -m envgen.cli"
RATE=results/gpu/next/rate.json
$E gpu probe params $RATE --out /tmp/params.yaml || exit 1
SPS=$(python3 -c "import json; print(json.load(open('$RATE'))['cohort_sps'])")
BUDGET=$(python3 -c "print(min(9.0, ($(left) - 5) / 60))")
echo "== Table 1 PPO, seeds $SEEDS at $SPS env steps/s, budget $BUDGET min; $(left) s left"
$E gpu run gpu-session replication/table1.yaml --row PPO --seeds ${SEEDS:?give SEEDS} \
  --params /tmp/params.yaml --store /tmp/store --out $OUT --sps $SPS --budget-min $BUDGET
echo "rc $?; $(left) s left"
