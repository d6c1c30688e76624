"""End-to-end training speed (env steps/s) of PPO or AD: our trainer against a reference setup,
and on a GPU, how many runs share one card.

Both sides run the same network, agent (`--agent ppo|ad`) and `Trainer`; only the vector
env differs: ours is `envgen.envs.vector.CrafterVecEnv`, the reference stock
`crafter.Env` in one subprocess per env behind pipes (the Achievement Distillation code's
setup), timed on the CPU after ours (`--no-reference` skips it). AD is timed over 8
rollouts by default, so that its auxiliary phase (every 8 updates) counts once.

Ours is timed at each `--concurrency` level, that many runs at once in their own
processes on `--device` (default 1 on the CPU, 1 2 4 8 16 on a GPU): total env steps/s,
per run the collection and the update speed (AD's auxiliary phase in the update), and
peak memory (GPU: allocated, the allocator's reservation and the card's use; CPU: resident
size). The last line is JSON: {"device", "mode", "levels": [...], "ours_sps" (1 run),
"reference_sps", "ratio" (ours / reference), ...}.

`--cohort 8,16` also times cohorts (`envgen.agents.cohort`: W seeds as one batched model
in this process): "cohorts" (one entry per setup; "env_workers": a rate holds only with
as many) and, for the fastest, "cohort", "cohort_sps", "baseline_sps" (the last
--concurrency level) and "ratio" = cohort_sps / baseline_sps (the reference's moves to
"reference_ratio"). The JSON so far is printed after each cohort: a later failure loses
no rate, and the last JSON line is the most complete (`envgen gpu probe rate`).
`--cohort-groups 1,2` times each size pipelined in that many groups (such an entry's
"collect_sps" and "update_sps" are null), `--kernels eager,graph,compile` each
unpipelined cohort in each update mode (`COHORT_KERNELS`; capture and compilation in the
untimed warm-up).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing as mp
import resource
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import crafter
import numpy as np
import torch

from envgen import numerics
from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import (
    AGENTS,
    COHORT_KERNELS,
    ADConfig,
    PPOConfig,
    add_rollout_arguments,
    model_preset,
    rollout_config,
)
from envgen.agents.device import add_device_arguments, describe, set_deterministic
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.agents.trainer import EnvFactory, Trainer, crafter_vec_env_factory
from envgen.bench.options import add_count, add_model
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError
from envgen.input_checks import comma_list, whole_number
from envgen.store.run_dir import RunDir


def _crafter_worker(conn: Connection, seed: int) -> None:
    """Own one stock crafter.Env; answer "step" (with auto-reset) and "close" messages."""
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
            episode = {"achievements": dict(info["achievements"]), "return": ret, "length": length}
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


concurrency_levels = comma_list(int, "give run counts like 1,2,4,8,16", allowed=lambda n: n >= 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model(parser, "; 'paper' needs a GPU to be practical")
    parser.add_argument(
        "--agent", default="ppo", choices=AGENTS, help="agent to train (default ppo)"
    )
    parser.add_argument(
        "--rollouts",
        type=whole_number(1),
        help="timed rollouts per setup (default 3 for ppo; for ad its aux period, 8)",
    )
    add_rollout_arguments(parser)
    parser.add_argument("--workers", type=whole_number(1), help="our vec env's worker count")
    add_device_arguments(parser)
    parser.add_argument(
        "--concurrency",
        type=concurrency_levels,
        help="runs at once on --device, e.g. 1,2,4,8,16 (default: 1 on cpu, 1,2,4,8,16 on cuda)",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the stock-Crafter reference timing"
    )
    parser.add_argument(
        "--cohort",
        type=concurrency_levels,
        help="also time cohorts of these sizes W (e.g. 8,16): W seeds as one batched model "
        "in this process (envgen.agents.cohort); the JSON line compares each with the "
        "last --concurrency level",
    )
    parser.add_argument(
        "--cohort-groups",
        type=concurrency_levels,
        default=(1,),
        help="time each --cohort size at each of these groupings, e.g. 1,2 (2: pipelined, "
        "one group of W/2 seeds collects while the other updates; default 1)",
    )
    parser.add_argument(
        "--kernels",
        type=comma_list(
            str,
            f"update modes among {', '.join(COHORT_KERNELS)}, joined by commas",
            distinct=True,
            allowed=lambda k: k in COHORT_KERNELS,
        ),
        default=("eager",),
        help="time each unpipelined --cohort in each of these update modes, e.g. "
        "eager,graph,compile (graph: each minibatch one CUDA graph; compile: torch.compile "
        "inside it; default eager)",
    )
    add_count(parser, "--seed", 0, "seed", 0)
    add_threads_argument(parser)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _timed(trainer: Trainer, device: str) -> dict[str, float]:
    """Wrap the agent's collect and update in timers (synchronised on a GPU)."""
    agent, seconds = trainer.agent, {"collect": 0.0, "update": 0.0}

    def timed(name: str, fn):
        def call(*args, **kwargs):
            _sync(device)
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            _sync(device)
            seconds[name] += time.perf_counter() - start
            return out

        return call

    agent.collect = timed("collect", agent.collect)  # type: ignore[method-assign]
    agent.update = timed("update", agent.update)  # type: ignore[method-assign]
    return seconds


MEMORY_KEYS = ("peak_mib", "reserved_mib", "card_used_mib")


def _memory_mib(device: str) -> dict[str, float]:
    """Peak memory of the tensors (GPU: `max_memory_allocated`; CPU: the process's peak
    resident size, `ru_maxrss` in KiB on Linux) and, on a GPU, what the plan must fit
    beyond it: the allocator's peak reservation and the card's memory in use now."""
    if not device.startswith("cuda"):
        return {"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    free, total = torch.cuda.mem_get_info(device)
    return {
        "peak_mib": torch.cuda.max_memory_allocated(device) / 2**20,
        "reserved_mib": torch.cuda.max_memory_reserved(device) / 2**20,
        "card_used_mib": (total - free) / 2**20,
    }


def _one_run(
    args: argparse.Namespace, ppo_cfg: PPOConfig, reference: bool, start: Any = None
) -> dict[str, float]:
    """One timed run: a warm-up rollout, then `args.rollouts` timed ones. With a
    `start` barrier, the timed part begins when every concurrent run is warm."""
    set_torch_threads(args.torch_threads)
    set_deterministic(args.deterministic)
    mode = numerics.current()  # `envgen bench numerics` starts this process in a mode
    numerics.apply_torch(mode)
    numerics.verify(mode)
    factory = reference_env_factory() if reference else crafter_vec_env_factory(args.workers)
    model = dataclasses.replace(
        model_preset(args.model), bf16_autocast=args.bf16, channels_last=args.channels_last
    )
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(
            model, ppo_cfg, args.seed, run_dir, args.device, env_factory=factory, agent=args.agent
        )
        try:
            trainer.train(1, [CrafterConfig()])  # opens the env, warms up torch
            if start is not None:
                start.wait()
            if args.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(args.device)
            seconds = _timed(trainer, args.device)
            begin = time.perf_counter()
            trainer.train(args.rollouts * ppo_cfg.rollout_size, [CrafterConfig()])
            wall = time.perf_counter() - begin
            memory = _memory_mib(args.device)
        finally:
            trainer.close()
    steps = args.rollouts * ppo_cfg.rollout_size
    return {
        "sps": steps / wall,
        "wall_s": wall,
        "steps": steps,
        "collect_sps": steps / seconds["collect"],
        "update_sps": steps / seconds["update"],
        **memory,
    }


def _worker(args: argparse.Namespace, ppo_cfg: PPOConfig, start: Any, out: Any) -> None:
    try:
        out.put(_one_run(args, ppo_cfg, reference=False, start=start))
    except BaseException as exc:  # reported in the parent, one line
        start.abort()
        out.put({"error": f"{type(exc).__name__}: {exc}"})


def _level(args: argparse.Namespace, ppo_cfg: PPOConfig, runs: int) -> dict[str, Any]:
    """`runs` runs at once, each in its own process; their totals and per-run means."""
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(runs), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(args, ppo_cfg, start, out)) for _ in range(runs)]
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise ConfigError("concurrency", f"{runs} runs at once failed: {errors[0]}")
    return _summary(results)


def _summary(results: list[dict[str, float]]) -> dict[str, Any]:
    """A level's line: total env steps/s of its runs, per-run means, peak memory."""
    mean = {k: float(np.mean([r[k] for r in results])) for k in results[0]}
    return {
        "runs": len(results),
        "total_sps": round(sum(r["steps"] for r in results) / max(r["wall_s"] for r in results), 1),
        "collect_sps": round(mean["collect_sps"], 1),
        "update_sps": round(mean["update_sps"], 1),
        **{k: round(max(r[k] for r in results), 1) for k in MEMORY_KEYS if k in results[0]},
    }


def run(args: argparse.Namespace) -> int:
    set_torch_threads(args.torch_threads)
    if args.rollouts is None:
        args.rollouts = ADConfig().aux_every if args.agent == "ad" else 3
    levels = args.concurrency or ((1, 2, 4, 8, 16) if args.device.startswith("cuda") else (1,))
    ppo_cfg = rollout_config(args, checkpoint_every=10**12)
    memory = "peak GPU memory" if args.device.startswith("cuda") else "peak resident memory"
    print(f"device: {describe(args.device)}; {args.agent}, {args.model}", flush=True)
    result: dict[str, Any] = {"device": describe(args.device), "levels": []}
    for runs in levels:
        if runs == 1:  # in this process, no spawn: the CPU default and the reference's peer
            level = _summary([_one_run(args, ppo_cfg, reference=False)])
        else:
            level = _level(args, ppo_cfg, runs)
        result["levels"].append(level)
        print(
            f"{runs:3d} run(s): {level['total_sps']:.1f} env steps/s in all; per run: "
            f"collect {level['collect_sps']:.1f}, update {level['update_sps']:.1f} "
            f"samples/s, {memory} {level['peak_mib']:.0f} MiB"
            + (
                f" (reserved {level['reserved_mib']:.0f} MiB; card in use at the end "
                f"{level['card_used_mib']:.0f} MiB)"
                if "reserved_mib" in level
                else ""
            ),
            flush=True,
        )
    ours = result["levels"][0]["total_sps"] if levels[0] == 1 else None
    result.update(ours_sps=ours, model=args.model, agent=args.agent, mode=precision_mode(args))
    if args.cohort:
        baseline = result["levels"][-1]
        result.update(baseline_runs=baseline["runs"], baseline_sps=baseline["total_sps"])
        result["cohorts"] = []
        for size in args.cohort:
            for groups, kernels in _cohort_setups(args):
                if groups > 1 and (size % groups or size // groups < 2):
                    print(f"cohort of {size} in {groups} groups: skipped (groups of < 2 seeds)")
                    continue
                timed = cohort_run(args, ppo_cfg, size, groups, kernels)
                timed["ratio"] = round(timed["cohort_sps"] / baseline["total_sps"], 3)
                result["cohorts"].append(timed)
                parts = (
                    f"collect {timed['collect_sps']:.1f}, update {timed['update_sps']:.1f} "
                    "samples/s"
                    if groups == 1
                    else f"pipelined in {groups} groups"
                )
                print(
                    f"cohort of {size} ({kernels}): {timed['cohort_sps']:.1f} env steps/s in all "
                    f"({timed['ratio']:.2f}x the {baseline['runs']}-run level); {parts}, "
                    f"peak {timed['peak_mib']:.0f} MiB",
                    flush=True,
                )
                best = max(result["cohorts"], key=lambda c: c["cohort_sps"])  # so far
                result.update(cohort=best["cohort"], cohort_groups=best["groups"])
                result.update({k: best[k] for k in ("kernels", "cohort_sps", "ratio")})
                print(json.dumps(result), flush=True)  # the result so far (module docstring)
        if not result["cohorts"]:
            raise ConfigError("cohort_groups", "no --cohort size splits into these groups")
    if not args.no_reference:
        cpu_args = argparse.Namespace(**{**vars(args), "device": "cpu"})
        reference = _one_run(cpu_args, ppo_cfg, reference=True)["sps"]
        print(f"reference (stock crafter.Env, {args.num_envs} subprocesses, cpu): {reference:.1f}")
        result["reference_sps"] = round(reference, 1)
        if ours is not None:
            # with --cohort, "ratio" is the cohort's over the baseline (issue 39's line)
            result["reference_ratio" if args.cohort else "ratio"] = round(ours / reference, 3)
    print(json.dumps(result))
    return 0


def precision_mode(args: argparse.Namespace) -> str:
    """float32 (TF32 off: --deterministic), tf32 (torch's default for convolutions) or
    bf16 (autocast); "+channels_last" where set."""
    exact = args.deterministic or not str(args.device).startswith("cuda")
    mode = "bf16" if args.bf16 else ("float32" if exact else "tf32")
    return mode + ("+channels_last" if args.channels_last else "")


def _cohort_setups(args: argparse.Namespace) -> list[tuple[int, str]]:
    """(groups, kernels) of every cohort to time: each grouping in eager mode, and each
    other kernel mode unpipelined (a pipelined cohort's update is eager)."""
    setups = [(groups, "eager") for groups in args.cohort_groups if "eager" in args.kernels]
    setups += [(1, k) for k in args.kernels if k != "eager"]
    if not setups:
        raise ConfigError("kernels", "name eager with --cohort-groups above 1")
    return setups


def cohort_run(
    args: argparse.Namespace, ppo_cfg: PPOConfig, size: int, groups: int, kernels: str
) -> dict[str, Any]:
    """A cohort of `size` seeds (in `groups` groups, pipelined when > 1) in this process:
    a warm-up rollout, then `args.rollouts` timed ones; env steps/s of all seeds together.
    A pipelined cohort's first timed rollout starts with group 0's collection alone and
    its last ends with the last group's update alone (as after every checkpoint in
    training): "rollout_s" gives each one's seconds, the middle ones the steady state."""
    set_deterministic(args.deterministic)
    model = dataclasses.replace(model_preset(args.model), bf16_autocast=args.bf16)
    seeds = [args.seed + k for k in range(size)]
    with tempfile.TemporaryDirectory() as root:
        dirs = [f"{root}/{s}" for s in seeds]
        trainer = CohortTrainer(
            model,
            ppo_cfg,
            seeds,
            dirs,
            args.device,
            env_factory=crafter_cohort_env_factory(args.workers),
            groups=groups,
            kernels=kernels,
        )
        try:
            trainer.train_until(ppo_cfg.rollout_size, [CrafterConfig()])
            workers = trainer.env_workers  # what a training call must give to match the rate
            if args.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(args.device)
            seconds = {"collect": math.nan, "update": math.nan}
            if groups == 1:  # a pipelined cohort's collection and update overlap
                seconds = _timed(trainer, args.device)  # type: ignore[arg-type]
            begin = time.perf_counter()
            trainer.train_until((1 + args.rollouts) * ppo_cfg.rollout_size, [CrafterConfig()])
            wall = time.perf_counter() - begin
            memory = _memory_mib(args.device)
        finally:
            trainer.close()
        lines = RunDir(Path(dirs[0])).metrics.read_text().splitlines()[1:]
        rollout_s = [ppo_cfg.rollout_size / json.loads(line)["time/sps"] for line in lines]
    steps = args.rollouts * ppo_cfg.rollout_size * size
    return {
        "cohort": size,
        "groups": groups,
        "kernels": kernels,
        "env_workers": workers,
        "cohort_sps": round(steps / wall, 1),
        "wall_s": round(wall, 2),
        "collect_sps": round(steps / seconds["collect"], 1) if groups == 1 else None,
        "update_sps": round(steps / seconds["update"], 1) if groups == 1 else None,
        "rollout_s": [round(t, 3) for t in rollout_s],
        **{k: round(v, 1) for k, v in memory.items()},
    }
