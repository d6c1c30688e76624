"""End-to-end training speed (env steps/s) of PPO or AD: our trainer against a reference setup.

Both sides run the same network, the same agent (`--agent ppo|ad`) and the same
`Trainer`; only the vector env differs. AD is timed over 8 rollouts by default, so that
its auxiliary phase (every 8 PPO updates) is counted once. Ours is
`envgen.envs.vector.CrafterVecEnv` (Crafter-EnvGen worlds); the reference is stock
`crafter.Env` in one subprocess per env behind multiprocessing pipes, the plain setup of
the Achievement Distillation code. Both are timed in the same
run, in turn, so machine load affects both alike. The last output line is JSON:
{"ours_sps": .., "reference_sps": .., "ratio": ..} (ratio = ours / reference).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from envgen.agents.config import AGENTS, MODEL_PRESETS, ADConfig, PPOConfig, model_preset
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.agents.trainer import EnvFactory, Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.input_checks import torch_device, whole_number


def _crafter_worker(conn: Connection, seed: int) -> None:
    """Own one stock crafter.Env; answer "step" (with auto-reset) and "close" messages."""
    import crafter

    env = crafter.Env(seed=seed)
    conn.send(env.reset())
    ret, length = 0.0, 0
    while True:
        cmd, action = conn.recv()
        if cmd == "close":
            conn.close()
            return
        obs, reward, done, info = env.step(int(action))
        ret, length = ret + reward, length + 1
        episode = None
        if done:
            achievements = dict(info["achievements"])
            episode = {"achievements": achievements, "return": ret, "length": length}
            episode["config_index"] = 0
            obs, ret, length = env.reset(), 0.0, 0
        conn.send((obs, reward, done, info["discount"] == 0, episode))


class StockCrafterPipeVecEnv:
    """Stock crafter.Env, one subprocess per env, the `CrafterVecEnv` interface."""

    def __init__(self, num_envs: int, seed: int):
        ctx = mp.get_context("spawn")
        self.num_envs = num_envs
        self._conns, self._procs = [], []
        for i in range(num_envs):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_crafter_worker, args=(child, seed + i), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        self._obs = np.stack([conn.recv() for conn in self._conns])

    def reset(self) -> np.ndarray:
        """The first observations (workers reset their env on start)."""
        return self._obs

    @property
    def last_obs(self) -> np.ndarray:
        return self._obs

    def step(self, actions: np.ndarray):
        for conn, action in zip(self._conns, actions, strict=True):
            conn.send(("step", action))
        results = [conn.recv() for conn in self._conns]
        obs = self._obs = np.stack([r[0] for r in results])
        reward = np.array([r[1] for r in results], np.float32)
        done = np.array([r[2] for r in results])
        terminated = np.array([r[3] for r in results]) & done
        infos: list[dict[str, Any]] = [{"episode": r[4]} if r[4] else {} for r in results]
        return obs, reward, terminated, done & ~terminated, infos

    def set_mixture(self, configs: Sequence[CrafterConfig], weights=None) -> None:
        """Stock Crafter is the only mixture; episodes continue."""
        _require_stock(configs)

    def close(self) -> None:
        for conn in self._conns:
            conn.send(("close", None))
        for proc in self._procs:
            proc.join(timeout=10)


def _require_stock(configs: Sequence[CrafterConfig]) -> None:
    if not all(c.is_stock for c in configs):
        raise ConfigError("configs", "the reference setup runs stock Crafter only")


def reference_env_factory() -> EnvFactory:
    def make(configs, num_envs, seed, weights):
        _require_stock(configs)
        return StockCrafterPipeVecEnv(num_envs, seed)

    return make


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default="nature",
        choices=sorted(MODEL_PRESETS),
        help="network preset (default nature; 'paper' needs a GPU to be practical)",
    )
    parser.add_argument(
        "--agent", default="ppo", choices=AGENTS, help="agent to train (default ppo)"
    )
    parser.add_argument(
        "--rollouts",
        type=whole_number(1),
        default=None,
        help="timed rollouts per setup (default 3 for ppo; for ad its aux period, 8)",
    )
    parser.add_argument(
        "--num-envs", type=whole_number(1), default=8, help="parallel envs (default 8)"
    )
    parser.add_argument(
        "--num-steps",
        type=whole_number(1),
        default=512,
        help="steps per env per rollout (default 512)",
    )
    parser.add_argument(
        "--minibatches", type=whole_number(1), default=8, help="minibatches (default 8)"
    )
    parser.add_argument(
        "--workers", type=whole_number(1), default=None, help="our vec env's worker count"
    )
    parser.add_argument(
        "--device", type=torch_device, default="cpu", help="torch device (default cpu)"
    )
    parser.add_argument("--seed", type=whole_number(0), default=0, help="seed (default 0)")
    add_threads_argument(parser)


def _timed_sps(factory: EnvFactory, args: argparse.Namespace, ppo_cfg: PPOConfig) -> float:
    """Env steps/s over `args.rollouts` rollouts after one untimed warm-up rollout."""
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(
            model_preset(args.model),
            ppo_cfg,
            args.seed,
            run_dir,
            args.device,
            env_factory=factory,
            agent=args.agent,
        )
        try:
            trainer.train(1, [CrafterConfig()])  # opens the env, warms up torch
            start = time.perf_counter()
            trainer.train(args.rollouts * ppo_cfg.rollout_size, [CrafterConfig()])
            return args.rollouts * ppo_cfg.rollout_size / (time.perf_counter() - start)
        finally:
            trainer.close()


def run(args: argparse.Namespace) -> int:
    set_torch_threads(args.torch_threads)
    if args.rollouts is None:
        args.rollouts = ADConfig().aux_every if args.agent == "ad" else 3
    ppo_cfg = PPOConfig(num_envs=args.num_envs, num_steps=args.num_steps, checkpoint_every=10**12)
    ours = _timed_sps(crafter_vec_env_factory(args.workers), args, ppo_cfg)
    print(f"ours: {ours:.1f} env steps/s ({args.agent}, {args.model})", flush=True)
    reference = _timed_sps(reference_env_factory(), args, ppo_cfg)
    print(f"reference (stock crafter.Env, {args.num_envs} subprocesses): {reference:.1f}")
    print(
        json.dumps(
            {
                "ours_sps": round(ours, 1),
                "reference_sps": round(reference, 1),
                "ratio": round(ours / reference, 3),
                "model": args.model,
                "agent": args.agent,
            }
        )
    )
    return 0
