#!/bin/bash
# Second device call: memory a real run holds (reserved, card in use), bf16 speed, AD.
exec > >(tee $OUT/session2.log) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
B="python3 -m envgen.cli bench train --device cuda --model paper --no-reference"
echo "== ppo 1 run deterministic"; timeout 45 $B --agent ppo --deterministic --concurrency 1 --rollouts 1 | tail -2
echo "== ppo 1 run bf16 channels_last, TF32 on"; timeout 40 $B --agent ppo --bf16 --channels-last --concurrency 1 --rollouts 1 | tail -2
echo "== ad 1 run deterministic"; timeout 90 $B --agent ad --deterministic --concurrency 1 | tail -2
echo "== ppo 8 runs deterministic"; timeout 100 $B --agent ppo --deterministic --concurrency 8 --rollouts 1 | tail -2
nvidia-smi --query-gpu=memory.used --format=csv
