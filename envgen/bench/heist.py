"""Heist-EnvGen env steps/s against plain procgen Heist, same run, same random actions.

Plain Heist is `procgen.ProcgenGym3Env(env_name="heist")` stepped with act/observe.
Heist-EnvGen is `HeistVecEnv` on a mixture of four LLM-style easy-mode configs (sizes,
colours, keys held), so every episode start pays for the level choice and edits; easy
mode on both sides, since a hard-mode world (13x13) costs more to render by itself.
Both take the same pre-drawn uniform random actions and are timed in alternating chunks
of `--chunk` batched steps, so that load from other processes falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from procgen import ProcgenGym3Env

from envgen.envs.heist import HeistConfig, HeistVecEnv
from envgen.envs.heist.engine import NUM_ACTIONS

BENCH_CONFIGS = (
    HeistConfig(),
    HeistConfig(maze_size=9, num_keys=1, keys_held=1),
    HeistConfig(maze_size=7, num_keys=2),
    HeistConfig(maze_size=5, num_keys=0),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-envs", type=int, default=64, help="games stepped together")
    parser.add_argument("--steps", type=int, default=3000, help="batched steps timed, each")
    parser.add_argument("--chunk", type=int, default=100, help="batched steps per alternation")
    parser.add_argument("--seed", type=int, default=0, help="engine and action seed")


def run(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    actions = rng.integers(0, NUM_ACTIONS, size=(args.steps, args.num_envs), dtype=np.int32)
    stock = ProcgenGym3Env(
        num=args.num_envs, env_name="heist", distribution_mode="easy", rand_seed=args.seed
    )
    ours = HeistVecEnv(args.num_envs, BENCH_CONFIGS, seed=args.seed)
    stock.observe()
    ours.reset()
    stock_s = ours_s = 0.0
    for start in range(0, args.steps, args.chunk):
        chunk = actions[start : start + args.chunk]
        t0 = time.perf_counter()
        for action in chunk:
            stock.act(action)
            stock.observe()
        t1 = time.perf_counter()
        for action in chunk:
            ours.step(action)
        t2 = time.perf_counter()
        stock_s += t1 - t0
        ours_s += t2 - t1
    stock.close()
    ours.close()
    result = {
        "ours_sps": round(actions.size / ours_s, 1),
        "stock_sps": round(actions.size / stock_s, 1),
        "ratio": round(stock_s / ours_s, 3),
        "num_envs": args.num_envs,
        "steps": int(actions.size),
    }
    print(json.dumps(result))
    return 0
