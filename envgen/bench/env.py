"""Crafter-EnvGen env steps/s against stock `crafter.Env`, both measured in this run.

A uniformly random policy drives each env for `--seconds`, resets included (a new world
per episode is part of the cost). With `--workers N`, `CrafterVecEnv` with 8 envs is
measured with N workers and with 1. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

import numpy as np

NUM_ACTIONS = 17
VEC_ENVS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="time per measurement")
    parser.add_argument("--workers", type=int, default=0, help="also measure the vector env")
    parser.add_argument("--seed", type=int, default=0, help="env and policy seed")


def _rate(step: Callable[[int], bool], reset: Callable[[], object], seconds: float, seed: int):
    """Steps per second of `step(action) -> done` under a random policy, resets included."""
    rng = np.random.RandomState(seed)
    reset()
    for action in rng.randint(NUM_ACTIONS, size=200):  # warm-up: compilation, caches
        if step(int(action)):
            reset()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in rng.randint(NUM_ACTIONS, size=100):
            if step(int(action)):
                reset()
        steps += 100
    return steps / (time.perf_counter() - start)


def stock_sps(seconds: float, seed: int) -> float:
    import crafter

    env = crafter.Env(seed=seed)
    return _rate(lambda a: env.step(a)[2], env.reset, seconds, seed)


def ours_sps(seconds: float, seed: int) -> float:
    from envgen.envs.crafter import CrafterEnv

    env = CrafterEnv(seed=seed)

    def step(action: int) -> bool:
        _, _, terminated, truncated, _ = env.step(action)
        return terminated or truncated

    return _rate(step, env.reset, seconds, seed)


def vec_sps(seconds: float, seed: int, workers: int) -> float:
    """Aggregate steps/s of `CrafterVecEnv` (8 envs, stock config) with `workers` processes."""
    from envgen.envs.crafter import CrafterConfig
    from envgen.envs.vector import CrafterVecEnv

    rng = np.random.RandomState(seed)
    with CrafterVecEnv([CrafterConfig()], VEC_ENVS, seed=seed, num_workers=workers) as vec:
        vec.reset()
        for _ in range(50):
            vec.step(rng.randint(NUM_ACTIONS, size=VEC_ENVS))
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            vec.step(rng.randint(NUM_ACTIONS, size=VEC_ENVS))
            steps += VEC_ENVS
        return steps / (time.perf_counter() - start)


def run(args: argparse.Namespace) -> int:
    result: dict[str, float] = {}
    load = os.getloadavg()[0]
    print(f"load average (1 min) at start: {load:.2f} on {os.cpu_count()} cores")
    result["stock_sps"] = stock_sps(args.seconds, args.seed)
    print(f"stock crafter.Env:   {result['stock_sps']:8.0f} steps/s (random policy, resets)")
    result["ours_sps"] = ours_sps(args.seconds, args.seed)
    print(f"envgen CrafterEnv:   {result['ours_sps']:8.0f} steps/s (random policy, resets)")
    result["ratio"] = result["ours_sps"] / result["stock_sps"]
    print(f"ratio:               {result['ratio']:8.2f}x")
    if args.workers > 0:
        result["vec_sps_1_worker"] = vec_sps(args.seconds, args.seed, 1)
        print(f"CrafterVecEnv x{VEC_ENVS}, 1 worker: {result['vec_sps_1_worker']:8.0f} steps/s")
        result["vec_sps"] = vec_sps(args.seconds, args.seed, args.workers)
        result["vec_speedup"] = result["vec_sps"] / result["vec_sps_1_worker"]
        print(
            f"CrafterVecEnv x{VEC_ENVS}, {args.workers} workers: {result['vec_sps']:8.0f} steps/s "
            f"({result['vec_speedup']:.2f}x 1 worker)"
        )
    result["load_average"] = (load + os.getloadavg()[0]) / 2  # others' jobs skew figures
    print(json.dumps({key: round(value, 2) for key, value in result.items()}))
    return 0
