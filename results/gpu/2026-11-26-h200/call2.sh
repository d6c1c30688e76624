#!/bin/bash
# Second device call for issue 39: probe.py (where the update's GPU time goes; CUDA graphs;
# cudnn.benchmark; the vmap cohort with benchmark on). Output to $OUT/probe.log.
exec > >(tee $OUT/probe.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 280 python3 results/gpu/2026-11-26-h200/probe.py cuda
echo "rc $?"
