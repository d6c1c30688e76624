#!/bin/bash
# One device call for issue 27 item 9: check, bench, then a chunk of the paper profile's
# Table 1 PPO row (10 seeds at once, as the executor schedules them). Logs to $OUT.
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - T0) )); }
exec > >(tee $OUT/session.log) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi; nproc; python3 -c "import torch, numpy; print(torch.__version__, torch.version.cuda, numpy.__version__)"
echo "== check $(left) s left"
timeout 170 python3 -m envgen.cli gpu check --out $OUT
echo "== check rc $? ; bench ppo $(left) s left"
timeout 110 python3 -m envgen.cli bench train --agent ppo --device cuda --model paper \
  --no-reference --deterministic --concurrency 1,4,16 --rollouts 2 > $OUT/bench_ppo.log 2>&1
echo "== bench ppo rc $?"; tail -25 $OUT/bench_ppo.log
echo "== bench ad $(left) s left"
timeout 90 python3 -m envgen.cli bench train --agent ad --device cuda --model paper \
  --no-reference --deterministic --concurrency 1,4 > $OUT/bench_ad.log 2>&1
echo "== bench ad rc $?"; tail -20 $OUT/bench_ad.log
B=$(python3 -c "print(max(0.5, min(9, ($(left) - 25) / 60)))")
echo "== gpu run budget $B min"
python3 -m envgen.cli gpu run paper replication/table1.yaml --row PPO --store /tmp/store \
  --out $OUT --budget-min $B
echo "== gpu run rc $? ; $(left) s left"
cd /tmp/store && tar czf $OUT/partial-store.tar.gz --exclude=checkpoints . ; ls -la $OUT
du -sh /tmp/store
