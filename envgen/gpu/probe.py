"""`envgen gpu probe kernels`: the cohort's kernel modes checked on the device.

It trains tiny rollouts of the paper network (or `--model`) as cohorts of each `--sizes`
W in each precision and writes OUT/kernel_checks.json; for every (W, precision, mode
other than eager) it checks (docs/agent.md, "Kernels"):
- captured: on CUDA the update became one CUDA graph (`CohortPPO.update_captured`);
- replay_equals_uncaptured: the captured update's losses and parameters equal, bit for
  bit, the same mode's run op by op (`_update_graph = False` before the first update);
- repeat_equal: a second captured run equals the first, bit for bit;
- pipelined_equals_groups: a cohort in 2 groups (`CohortTrainer(groups=2)`) equals its
  groups trained one after the other.
Exit 1 if a check fails. Off CUDA nothing is captured and the other checks still run:
`make test` runs this tiny on the CPU. (The rate a call is sized from: `envgen.gpu.rate`.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envgen.agents.cohort import CohortPPO
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import COHORT_KERNELS, ModelConfig, PPOConfig, model_preset
from envgen.agents.device import describe, set_deterministic
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv
from envgen.files import write_json_atomic
from envgen.gpu.check import run_logs

# Small rollouts: the checks are about which kernels run, not about learning.
CHECK_PPO = PPOConfig(num_envs=8, num_steps=32, minibatches=4, epochs=2, checkpoint_every=10**9)
TINY_PPO = PPOConfig(num_envs=2, num_steps=16, minibatches=2, epochs=2, checkpoint_every=10**9)
TINY_MODEL = ModelConfig(channels=(4, 8), blocks_per_stack=1, embed_size=16, hidden_size=16)
WORLD = [CrafterConfig()]
ROLLOUTS = 2


def _train(
    model: ModelConfig,
    ppo: PPOConfig,
    seeds: Sequence[int],
    device: torch.device,
    kernels: str,
    capture: bool,
) -> tuple[list[Any], dict[str, torch.Tensor], bool]:
    """(losses of each update, final parameters, captured) of ROLLOUTS rollouts."""
    env = CrafterVecEnv(WORLD, ppo.num_envs * len(seeds), 0, num_workers=1, group_size=ppo.num_envs)
    try:
        obs = env.reset()
        agent = CohortPPO(model, ppo, seeds, device, kernels=kernels)
        if not capture:
            agent._update_graph = False  # the same minibatch, op by op
        gens = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
        rngs = [np.random.default_rng(s) for s in seeds]
        losses = []
        for _ in range(ROLLOUTS):
            obs, _ = agent.collect(env, obs, gens)
            losses.append(agent.update(rngs))
        captured = agent.update_captured
        params = {k: v.detach().cpu().clone() for k, v in agent.params.items()}
        agent.close()  # its graphs freed before the next capture, not at a random GC
    finally:
        env.close()
    return losses, params, captured


def _equal(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and all(torch.equal(a[1][k], b[1][k]) for k in a[1])


def _pipelined_equals_groups(
    model: ModelConfig, ppo: PPOConfig, seeds: Sequence[int], device: str, kernels: str
) -> bool:
    """A cohort in 2 groups against its two halves trained as cohorts of their own: the
    same episodes and losses per seed."""
    half = len(seeds) // 2

    def logs(groups: int, chunks: list[Sequence[int]], root: Path) -> dict[int, tuple]:
        out = {}
        for chunk in chunks:
            dirs = [root / str(s) for s in chunk]
            trainer = CohortTrainer(
                model,
                ppo,
                chunk,
                dirs,
                device,
                env_factory=crafter_cohort_env_factory(1),
                groups=groups,
                kernels=kernels,
            )
            try:
                trainer.train_until(3 * ppo.rollout_size, WORLD)
            finally:
                trainer.close()
            out.update({s: run_logs(d) for s, d in zip(chunk, dirs, strict=True)})
        return out

    with tempfile.TemporaryDirectory() as root:
        together = logs(2, [seeds], Path(root) / "pipelined")
        apart = logs(1, [seeds[:half], seeds[half:]], Path(root) / "groups")
    return together == apart


def kernel_checks(
    device: str,
    model: ModelConfig,
    ppo: PPOConfig,
    sizes: Sequence[int],
    bf16s: Sequence[bool],
    modes: Sequence[str] = COHORT_KERNELS[1:],
    out: Path | None = None,
) -> list[dict[str, Any]]:
    """One entry per (W, precision, mode of `modes`); see the module docstring. With
    `out`, the entries so far are written there after each one (a call's timeout keeps
    what was checked)."""
    set_deterministic(True)  # repeats must be bit-equal on the device
    entries = []
    for size in sizes:
        seeds = list(range(size))
        for bf16 in bf16s:
            cfg = dataclasses.replace(model, bf16_autocast=bf16)
            for kernels in modes:
                start = time.perf_counter()
                first = _train(cfg, ppo, seeds, torch.device(device), kernels, capture=True)
                again = _train(cfg, ppo, seeds, torch.device(device), kernels, capture=True)
                plain = _train(cfg, ppo, seeds, torch.device(device), kernels, capture=False)
                entry = {
                    "cohort": size,
                    "precision": "bf16" if bf16 else "float32",
                    "kernels": kernels,
                    "captured": first[2],
                    "replay_equals_uncaptured": _equal(first[:2], plain[:2]),
                    "repeat_equal": _equal(first[:2], again[:2]),
                    "pipelined_equals_groups": _pipelined_equals_groups(
                        cfg, ppo, seeds, device, kernels
                    ),
                    "seconds": round(time.perf_counter() - start, 1),
                }
                entries.append(entry)
                print(json.dumps(entry), flush=True)
                if out is not None:
                    failures = failed(entries, str(device).startswith("cuda"))
                    checks = {"device": describe(device), "checks": entries, "failed": failures}
                    write_json_atomic(out / "kernel_checks.json", checks)
    return entries


def check_names(on_cuda: bool) -> list[str]:
    """The checks of an entry that must hold: "captured" only where CUDA can capture."""
    names = ["replay_equals_uncaptured", "repeat_equal", "pipelined_equals_groups"]
    return names + (["captured"] if on_cuda else [])


def failed(entries: Sequence[dict[str, Any]], on_cuda: bool) -> list[str]:
    """The checks that failed, as "W/precision/mode: check" lines."""
    names = check_names(on_cuda)
    return [
        f"{e['cohort']}/{e['precision']}/{e['kernels']}: {name}"
        for e in entries
        for name in names
        if not e[name]
    ]


def run_kernels(args: argparse.Namespace) -> int:
    """`envgen gpu probe kernels`."""
    tiny = args.tiny
    sizes = args.sizes or ((4,) if tiny else (4, 8))
    model = TINY_MODEL if tiny else model_preset(args.model)
    ppo = TINY_PPO if tiny else CHECK_PPO
    on_cuda = str(args.device).startswith("cuda")
    bf16s = (False, True) if on_cuda else (False,)
    print(f"device: {describe(args.device)}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    entries = kernel_checks(args.device, model, ppo, sizes, bf16s, args.kernels, out=args.out)
    bad = failed(entries, on_cuda)
    for line in bad:
        print(f"[gpu probe] FAILED {line}")
    total = len(entries) * len(check_names(on_cuda))
    print(f"[gpu probe] {total - len(bad)} of {total} checks hold")
    return 1 if bad else 0
