"""Crafter-EnvGen env steps/s against stock `crafter.Env`, both measured in this run.

A uniformly random policy drives each env for `--seconds`, resets included (a new world
per episode is part of the cost). Rates are given by the wall clock and by CPU time: on
a machine shared with other jobs the wall clock understates what a free core does.
`--workers N` also measures `CrafterVecEnv` (8 envs) with N workers and with 1.
`--starts N` times N opens and resets of a 2-env vector env (`num_workers=2`) in a fresh
process, with workers forked from the preloaded forkserver (envgen/envs/worker_preload.py)
and without (each worker loads the engine itself): every evaluation and curriculum
validation agent opens a vector env.
The last line is JSON (`ours_sps`, `stock_sps`, `ratio` are wall-clock figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import crafter
import numpy as np

from envgen.bench.options import add_count
from envgen.envs.crafter import CrafterConfig, CrafterEnv
from envgen.envs.vector import CrafterVecEnv
from envgen.errors import EnvGenError
from envgen.input_checks import positive_number

NUM_ACTIONS = 17
VEC_ENVS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seconds",
        type=positive_number,
        default=10.0,
        help="seconds per measurement (default %(default)s)",
    )
    add_count(parser, "--workers", 0, "also measure the vector env with this many workers", 0)
    add_count(parser, "--starts", 0, "also time this many vector env starts, preloaded and cold", 0)
    add_count(parser, "--seed", 0, "env and policy seed", 0)


def _rate(
    step: Callable[[int], bool], reset: Callable[[], object], seconds: float, seed: int
) -> tuple[float, float]:
    """Steps per second of `step(action) -> done` under a random policy, resets included,
    by the wall clock and by this process's CPU time."""
    rng = np.random.RandomState(seed)
    reset()
    for action in rng.randint(NUM_ACTIONS, size=200):  # warm-up: compilation, caches
        if step(int(action)):
            reset()
    steps, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for action in rng.randint(NUM_ACTIONS, size=100):
            if step(int(action)):
                reset()
        steps += 100
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu_start)


def vec_sps(seconds: float, seed: int, workers: int) -> tuple[float, float]:
    """`CrafterVecEnv` (8 envs, stock config) with `workers` processes: aggregate steps/s
    by the wall clock, and by CPU time (steps / the busiest process's CPU seconds, the
    rate with a free core per process; immune to other jobs on a shared machine)."""
    rng = np.random.RandomState(seed)
    with CrafterVecEnv([CrafterConfig()], VEC_ENVS, seed=seed, num_workers=workers) as vec:
        vec.reset()
        for _ in range(50):
            vec.step(rng.randint(NUM_ACTIONS, size=VEC_ENVS))
        cpu_start, parent_start = vec.worker_cpu_seconds(), time.process_time()
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            vec.step(rng.randint(NUM_ACTIONS, size=VEC_ENVS))
            steps += VEC_ENVS
        wall = time.perf_counter() - start
        parent = time.process_time() - parent_start
        busiest = max(b - a for a, b in zip(cpu_start, vec.worker_cpu_seconds(), strict=True))
        return steps / wall, steps / max(busiest, parent)


# Run in a fresh interpreter: a process's forkserver starts once, with the preload it
# finds then, so each variant needs a process of its own.
_STARTS = """
import json, sys, time
from envgen.envs import vector
from envgen.envs.crafter import CrafterConfig
if sys.argv[1] == "cold":
    vector.PRELOAD = ()
seconds = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    with vector.CrafterVecEnv([CrafterConfig()], 2, seed=0, num_workers=2) as vec:
        vec.reset()
    seconds.append(time.perf_counter() - start)
print(json.dumps(seconds))
"""


def start_seconds(variant: str, starts: int) -> list[float]:
    """Wall seconds of each of `starts` vector env opens and resets in one fresh process;
    `variant` "cold" empties the forkserver preload."""
    done = subprocess.run(
        [sys.executable, "-c", _STARTS, variant, str(starts)], capture_output=True, text=True
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvGenError(f"--starts: the {variant} vector env failed to start: {last}")
    return json.loads(done.stdout.splitlines()[-1])


def run_starts(starts: int, result: dict[str, float]) -> None:
    """Time `starts` vector env opens with and without the preload; adds to `result`."""
    for variant in ("preloaded", "cold"):
        seconds = start_seconds(variant, starts)
        result[f"start_first_s_{variant}"] = seconds[0]
        line = f"vector env start, {variant}: first {seconds[0]:.3f} s"
        if len(seconds) > 1:
            result[f"start_later_s_{variant}"] = sum(seconds[1:]) / (len(seconds) - 1)
            line += f", later ones {result[f'start_later_s_{variant}']:.3f} s on average"
        print(f"{line} ({starts} starts)")
    if starts > 1:
        result["start_ratio"] = result["start_later_s_cold"] / result["start_later_s_preloaded"]
        print(f"later starts, cold / preloaded: {result['start_ratio']:.1f}x")


def run(args: argparse.Namespace) -> int:
    result: dict[str, float] = {}
    load = os.getloadavg()[0]
    print(f"load average (1 min) at start: {load:.2f} on {os.cpu_count()} cores")
    stock, ours = crafter.Env(seed=args.seed), CrafterEnv(seed=args.seed)
    stock_rate = _rate(lambda a: stock.step(a)[2], stock.reset, args.seconds, args.seed)
    result["stock_sps"], result["stock_cpu_sps"] = stock_rate
    ours_rate = _rate(lambda a: any(ours.step(a)[2:4]), ours.reset, args.seconds, args.seed)
    result["ours_sps"], result["ours_cpu_sps"] = ours_rate  # [2:4]: ended or cut
    result["ratio"] = result["ours_sps"] / result["stock_sps"]
    result["cpu_ratio"] = result["ours_cpu_sps"] / result["stock_cpu_sps"]
    for name, key in (("stock crafter.Env", "stock"), ("envgen CrafterEnv", "ours")):
        print(
            f"{name}: {result[key + '_sps']:8.0f} steps/s wall clock, "
            f"{result[key + '_cpu_sps']:8.0f} steps/s by CPU time (random policy, resets)"
        )
    print(f"ratio: {result['ratio']:.2f}x wall clock, {result['cpu_ratio']:.2f}x by CPU time")
    if args.workers > 0:
        for label, workers in (("_1_worker", 1), ("", args.workers)):
            wall, cpu = vec_sps(args.seconds, args.seed, workers)
            result[f"vec_sps{label}"], result[f"vec_cpu_sps{label}"] = wall, cpu
            print(
                f"CrafterVecEnv x{VEC_ENVS}, {workers} worker(s): {wall:8.0f} steps/s wall clock, "
                f"{cpu:8.0f} steps/s by CPU time"
            )
        result["vec_speedup"] = result["vec_sps"] / result["vec_sps_1_worker"]
        result["vec_cpu_speedup"] = result["vec_cpu_sps"] / result["vec_cpu_sps_1_worker"]
        print(
            f"{args.workers} workers vs 1: {result['vec_speedup']:.2f}x wall clock, "
            f"{result['vec_cpu_speedup']:.2f}x by CPU time"
        )
    if args.starts > 0:
        run_starts(args.starts, result)
    result["load_average"] = (load + os.getloadavg()[0]) / 2  # others' jobs skew figures
    print(json.dumps({key: round(value, 3) for key, value in result.items()}))
    return 0
