"""Learning equivalence of precision modes: the same seeds trained as one cohort per mode.

Why: a paper-network result trained in tf32 or bf16, or in a cohort, is used only after a
short A/B shows that it learns like float32 (docs/agent.md, "On a GPU"). Each mode
trains the same seeds (same initial weights, env seeds and generators) as one cohort of
W = len(--seeds) for --steps env steps per seed; the logs go to --out/MODE/seed-K.

The test, stated before any A/B ran: per seed, the mean return of the episodes that
finish in the last quarter of the steps; the modes *agree* when a two-sided Welch test
of the per-seed means gives p >= 0.05 and the difference of the arm means is at most the
larger arm's between-seed standard deviation (seed noise). With 4 seeds a side this rules
out only large differences: the JSON line gives the 95% interval of the difference.
`--analyse` repeats the test on the logs already in --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from envgen.agents.cohort_trainer import CohortTrainer, crafter_cohort_env_factory
from envgen.agents.config import add_rollout_arguments, model_preset, rollout_config
from envgen.agents.device import describe, set_deterministic
from envgen.agents.runlog import read_jsonl
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.envs.crafter.config import CrafterConfig
from envgen.input_checks import comma_list, torch_device, whole_number
from envgen.store.run_dir import RunDir

MODES = ("float32", "tf32", "bf16")
WINDOW = 0.25  # the last quarter of the steps


_modes = comma_list(
    str,
    f"give two or more of {', '.join(MODES)}",
    least=2,
    distinct=True,
    allowed=lambda m: m in MODES,
)
_seeds = comma_list(
    int,
    "give 2 or more distinct seeds, e.g. 0,1,2,3",
    least=2,
    distinct=True,
    allowed=lambda s: s >= 0,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", type=torch_device, default="cuda", help="default cuda")
    parser.add_argument("--model", default="paper", help="network preset (default paper)")
    parser.add_argument("--modes", type=_modes, default=("float32", "bf16"), help="float32,bf16")
    parser.add_argument("--seeds", type=_seeds, default=(100, 101, 102, 103), help="the cohort")
    parser.add_argument("--steps", type=whole_number(1), default=200_000, help="per seed")
    parser.add_argument("--out", type=Path, required=True, help="logs go to OUT/MODE/seed-K")
    parser.add_argument("--workers", type=whole_number(1), help="env workers")
    parser.add_argument(
        "--analyse", action="store_true", help="only test the logs already in --out"
    )
    add_rollout_arguments(parser)
    add_threads_argument(parser)


def train_mode(args: argparse.Namespace, mode: str) -> float:
    """One cohort of `args.seeds` in `mode`; returns its wall-clock seconds."""
    set_deterministic(mode == "float32")
    model = dataclasses.replace(model_preset(args.model), bf16_autocast=mode == "bf16")
    ppo = rollout_config(args, checkpoint_every=10**12)
    dirs = [RunDir.of(args.out, mode, s).root for s in args.seeds]
    trainer = CohortTrainer(
        model,
        ppo,
        args.seeds,
        dirs,
        args.device,
        env_factory=crafter_cohort_env_factory(args.workers),
        progress=True,
    )
    start = time.perf_counter()
    try:
        trainer.train_until(args.steps, [CrafterConfig()])
    finally:
        trainer.close()
    return time.perf_counter() - start


def window_returns(run_dir: Path, steps: int) -> float:
    """Mean return of the episodes finishing in the last quarter of `steps`."""
    episodes = read_jsonl(RunDir(run_dir).episodes)
    kept = [e["reward"] for e in episodes if steps * (1 - WINDOW) < e["step"] <= steps]
    return float(np.mean(kept)) if kept else float("nan")


def analyse(out: Path, modes: tuple[str, ...], seeds: tuple[int, ...], steps: int) -> dict:
    """The stated test of each mode against the first (module docstring)."""
    arms = {
        m: np.array([window_returns(RunDir.of(out, m, s).root, steps) for s in seeds])
        for m in modes
    }
    base = arms[modes[0]]
    result: dict[str, Any] = {"steps": steps, "seeds": list(seeds), "window": WINDOW}
    result["arms"] = {
        m: {
            "mean": round(float(v.mean()), 3),
            "sd": round(float(v.std(ddof=1)), 3),
            "per_seed": [round(float(x), 3) for x in v],
        }
        for m, v in arms.items()
    }
    for mode in modes[1:]:
        other = arms[mode]
        diff = float(other.mean() - base.mean())
        welch = stats.ttest_ind(other, base, equal_var=False)
        ci = welch.confidence_interval(0.95)  # of the difference, Welch's degrees of freedom
        noise = float(max(other.std(ddof=1), base.std(ddof=1)))
        result[f"{mode}_vs_{modes[0]}"] = {
            "difference": round(diff, 3),
            "ci95": [round(float(ci.low), 3), round(float(ci.high), 3)],
            "welch_p": round(float(welch.pvalue), 4),
            "seed_noise": round(noise, 3),
            "agree": bool(welch.pvalue >= 0.05 and abs(diff) <= noise),
        }
    return result


def run(args: argparse.Namespace) -> int:
    set_torch_threads(args.torch_threads)
    result: dict[str, Any] = {"device": describe(args.device), "model": args.model}
    if not args.analyse:
        result["wall_s"] = {}
        for mode in args.modes:
            result["wall_s"][mode] = round(train_mode(args, mode), 1)
            rate = args.steps * len(args.seeds) / result["wall_s"][mode]
            print(f"{mode}: {result['wall_s'][mode]:.0f} s, {rate:.0f} env steps/s", flush=True)
    result.update(analyse(args.out, args.modes, args.seeds, args.steps))
    print(json.dumps(result))
    return 0
