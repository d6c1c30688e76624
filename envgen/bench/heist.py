"""Heist-EnvGen env steps/s against plain procgen Heist, same run, same random actions.

Plain Heist is `procgen.ProcgenGym3Env(env_name="heist")` stepped with act/observe;
Heist-EnvGen is `HeistVecEnv` on four LLM-style configs (sizes, colours, keys held), so
every episode start pays for the level choice and edits. Easy mode on both sides (a
13x13 hard-mode world costs more to render by itself). Both take the same pre-drawn
random actions, timed in alternating chunks of `--chunk` batched steps (which goes first
alternates too). Steps/s are medians over chunks and `ratio` the median of the paired
per-chunk ratios, so that bursts of others' load do not decide it; `cpu_ratio` compares
the process CPU time (all engine threads) spent on each, which others' load does not inflate.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from envgen.bench.options import add_count
from envgen.envs.heist import HeistConfig, HeistVecEnv
from envgen.envs.heist.engine import NUM_ACTIONS

BENCH_CONFIGS = (
    HeistConfig(),
    HeistConfig(maze_size=9, num_keys=1, keys_held=1),
    HeistConfig(maze_size=7, num_keys=2),
    HeistConfig(maze_size=5, num_keys=0),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_count(parser, "--num-envs", 64, "games stepped together")
    add_count(parser, "--steps", 3000, "batched steps timed, each side")
    add_count(parser, "--chunk", 50, "batched steps per alternation")
    add_count(parser, "--seed", 0, "engine and action seed", 0)


def _chunk_times(
    stock: Any, ours: HeistVecEnv, chunk: np.ndarray, ours_first: bool
) -> dict[str, tuple[float, float]]:
    """{name: (wall s, process CPU s, all threads)} of stepping both through `chunk`."""
    times: dict[str, tuple[float, float]] = {}
    for name in ("ours", "stock") if ours_first else ("stock", "ours"):
        wall, cpu = time.perf_counter(), time.process_time()
        for action in chunk:
            if name == "stock":
                stock.act(action)
                stock.observe()
            else:
                ours.step(action)
        times[name] = (time.perf_counter() - wall, time.process_time() - cpu)
    return times


def run(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    actions = rng.integers(0, NUM_ACTIONS, size=(args.steps, args.num_envs), dtype=np.int32)
    # lazy: optional dependency (procgen): `envgen bench --help` imports every target, and
    # a Crafter-only machine has no procgen (tests/test_lazy_imports.py)
    from procgen import ProcgenGym3Env

    stock = ProcgenGym3Env(
        num=args.num_envs, env_name="heist", distribution_mode="easy", rand_seed=args.seed
    )
    ours = HeistVecEnv(BENCH_CONFIGS, args.num_envs, seed=args.seed)
    stock.observe()
    ours.reset()
    pairs = [
        _chunk_times(stock, ours, actions[start : start + args.chunk], ours_first=n % 2 == 1)
        for n, start in enumerate(range(0, args.steps, args.chunk))
    ]
    stock.close()
    ours.close()
    steps = np.array([min(args.chunk, args.steps - s) for s in range(0, args.steps, args.chunk)])
    wall = {k: np.array([p[k][0] for p in pairs]) for k in ("stock", "ours")}
    cpu = {k: sum(p[k][1] for p in pairs) for k in ("stock", "ours")}
    result = {
        "ours_sps": round(float(np.median(steps * args.num_envs / wall["ours"])), 1),
        "stock_sps": round(float(np.median(steps * args.num_envs / wall["stock"])), 1),
        "ratio": round(float(np.median(wall["stock"] / wall["ours"])), 3),
        "cpu_ratio": round(cpu["stock"] / cpu["ours"], 3),
        "num_envs": args.num_envs,
        "steps": int(actions.size),
    }
    print(json.dumps(result))
    return 0
