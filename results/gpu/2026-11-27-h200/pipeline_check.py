"""A pipelined cohort on the GPU against its groups trained one after the other.

On the CPU, tests/test_agents_cohort.py shows a pipelined cohort's seeds equal their
groups trained as plain cohorts of W/2, bit for bit. On CUDA the pipelined groups also
collect on their own high-priority stream while the other group's update runs on the
default stream; this checks that the streams change no number: seeds 0..3 as one
pipelined cohort of 4 (groups [0, 1] and [2, 3]) and as cohorts [0, 1] and [2, 3], three
rollouts each (group 0 collects ahead twice), deterministic kernels, float32 and bf16.
One JSON line per precision: each seed's metrics (losses, episodes) and final weights
equal or not, whether the policy steps ran from CUDA graphs, and the wall seconds.

Usage: python3 results/gpu/next/pipeline_check.py [--device cuda] [--model paper]
"""

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from envgen.agents.checkpoint import load_checkpoint
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import PPOConfig, model_preset
from envgen.agents.device import set_deterministic
from envgen.envs.crafter.config import CrafterConfig
from envgen.store.manifest import CHECKPOINT_DIR

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
parser.add_argument("--model", default="paper")
parser.add_argument("--workers", type=int, default=None)
args = parser.parse_args()
set_deterministic(True)
PPO = PPOConfig(num_envs=8, num_steps=64, minibatches=4, checkpoint_every=10**9)
STEPS = 3 * PPO.rollout_size
WORLD = [CrafterConfig()]


def train(seeds, root, model, groups=1):
    dirs = [root / f"seed-{s}" for s in seeds]
    trainer = CohortTrainer(
        model,
        PPO,
        seeds,
        dirs,
        args.device,
        env_factory=crafter_cohort_env_factory(args.workers),
        groups=groups,
    )
    try:
        trainer.train_until(STEPS, WORLD)
        trainer.checkpoint()
        graphs = [g.agent._graph not in (None, False) for g in trainer._groups]
    finally:
        trainer.close()
    return graphs


def outcome(run):
    metrics = [
        {k: v for k, v in json.loads(line).items() if not k.startswith("time/")}
        for line in (run / "metrics.jsonl").read_text().splitlines()
    ]
    weights = load_checkpoint(run / CHECKPOINT_DIR, torch.device("cpu"))["model"]
    return (run / "episodes.jsonl").read_text(), metrics, weights


def main():
    # spawned env workers re-import this file: only the guarded call may train
    ok = True
    for bf16 in (False, True):
        model = dataclasses.replace(model_preset(args.model), bf16_autocast=bf16)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            start = time.perf_counter()
            graphs = train([0, 1, 2, 3], root / "pipelined", model, groups=2)
            pipelined_s = time.perf_counter() - start
            start = time.perf_counter()
            train([0, 1], root / "alone", model)
            train([2, 3], root / "alone", model)
            alone_s = time.perf_counter() - start
            equal = {}
            for seed in range(4):
                a = outcome(root / "pipelined" / f"seed-{seed}")
                b = outcome(root / "alone" / f"seed-{seed}")
                equal[seed] = {
                    "episodes": a[0] == b[0],
                    "metrics": a[1] == b[1],
                    "weights": all(torch.equal(a[2][k], b[2][k]) for k in a[2]),
                }
            same = all(all(v.values()) for v in equal.values())
            ok = ok and same
            print(
                json.dumps(
                    {
                        "bf16": bf16,
                        "device": args.device,
                        "all_equal": same,
                        "equal": equal,
                        "graphs": graphs,
                        "pipelined_s": round(pipelined_s, 1),
                        "groups_one_after_the_other_s": round(alone_s, 1),
                    }
                ),
                flush=True,
            )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
