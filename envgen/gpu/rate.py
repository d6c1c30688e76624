"""`envgen gpu probe rate|params`: the rate a training call is sized from, and the params
file that trains at it. Plain JSON and YAML, no torch: these run on any machine.

`probe rate BENCH_JSON --out RATE_JSON` writes, from `envgen bench train --cohort W
--kernels ...`'s last JSON line, the fastest cohort's W, kernel mode, precision, env
workers and env steps/s, beside the same call's one-run baseline. `probe params RATE_JSON
--out PARAMS` writes params.yaml with one more profile that trains cohorts of that W in
that mode, and the bench's env worker count as `execution.env_workers`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from envgen.agents.config import COHORT_KERNELS
from envgen.errors import ConfigError
from envgen.files import write_json_atomic
from envgen.input_checks import read_text
from envgen.json_input import JSONInputError
from envgen.json_input import loads as loads_json
from envgen.json_input import read as read_json
from envgen.pipeline.params_stage import load_settings, read_params


def read_bench(path: Path) -> dict[str, Any]:
    """The last JSON line of the file `path` (`envgen bench train`'s output, saved); any
    problem is one `ConfigError` naming the file (call A's log may be cut short)."""
    what = "the saved output of `envgen bench train` (its last JSON line is read)"
    lines = [line for line in read_text(path, what).splitlines() if line.startswith("{")]
    bench, problem = None, None
    for line in reversed(lines):  # bench train prints its result so far after each cohort
        try:
            bench = loads_json(line, path)
        except JSONInputError as exc:  # a line cut short by a failed or killed bench
            problem = problem or exc
            continue
        if isinstance(bench, dict):
            break
        bench = None
    if bench is None:
        reason = f"{problem}" if problem else f"{path}: no JSON line"
        raise ConfigError(
            "bench",
            f"{reason}; `envgen bench train --cohort W` prints one after each cohort (did the "
            "bench fail before its first cohort? read the log)",
        )
    if not all(isinstance(bench.get(key), str) for key in ("device", "model", "mode")):
        raise ConfigError("bench", f"{path}: its last JSON line is not bench train's; give {what}")
    return bench


def pick_rate(bench: dict[str, Any]) -> dict[str, Any]:
    """The fastest unpipelined cohort of `envgen bench train`'s JSON line, with the same
    call's baseline (what `gpu run --sps` takes); a field missing or mistyped is a
    `ConfigError`."""
    cohorts = bench.get("cohorts") or []
    if not isinstance(cohorts, list) or not all(isinstance(c, dict) for c in cohorts):
        raise ConfigError("bench", "its `cohorts` is not a list of bench train's cohorts")
    cohorts = [c for c in cohorts if c.get("groups") == 1]
    if not cohorts:
        raise ConfigError("bench", "no unpipelined cohort in this bench JSON; time --cohort W")
    try:
        best = max(cohorts, key=lambda c: c["cohort_sps"])
        return {
            "device": bench["device"],
            "model": bench["model"],
            "mode": bench["mode"],
            "cohort": best["cohort"],
            "kernels": best.get("kernels", "eager"),
            "env_workers": best.get("env_workers"),  # None: a bench from before it was recorded
            "cohort_sps": best["cohort_sps"],
            "baseline_runs": bench["baseline_runs"],
            "baseline_sps": bench["baseline_sps"],
            "ratio": round(best["cohort_sps"] / bench["baseline_sps"], 3),
            "all": {f"{c['cohort']}/{c.get('kernels', 'eager')}": c["cohort_sps"] for c in cohorts},
        }
    except (KeyError, TypeError, ZeroDivisionError) as exc:
        detail = f"field {exc} missing" if isinstance(exc, KeyError) else str(exc)
        raise ConfigError(
            "bench", f"not bench train's JSON line ({detail}); time it again with bench train"
        ) from None


SESSION_PROFILE = "gpu-session"
ROW_SEEDS = 10  # Table 1's seeds (paper section 4.1: 10 seeds per row)


def session_params(params: dict[str, Any], rate: dict[str, Any], base: str = "paper") -> dict:
    """params.yaml's mapping with one more profile, `SESSION_PROFILE`: `base` trained as
    cohorts of the rate's W, kernel mode and precision, with seeds for whole cohorts of at
    least `ROW_SEEDS` (a cohort's seeds must all be there: `split_cohorts`); a call trains
    some of them (`gpu run --seeds`). `execution.env_workers` becomes the bench's worker
    count: params.yaml's 1 is a CPU campaign's, and a cohort stepping its W x 8 envs in
    one worker trains far below the rate the call is sized from."""
    size, kernels = int(rate["cohort"]), str(rate["kernels"])
    if kernels not in COHORT_KERNELS or size < 2:
        raise ConfigError("rate", f"cohort {size}, kernels {kernels!r}: not a cohort's rate")
    workers = rate.get("env_workers")
    if type(workers) is not int or workers < 1:
        raise ConfigError(
            "rate",
            f"env_workers {workers!r}: the rate file names no worker count of the bench "
            "(a bench from before it was recorded); run call A again",
        )
    profile = dict(params["profiles"][base])
    profile.update(
        cohort=size,
        cohort_kernels=kernels,
        bf16_autocast=rate["mode"].startswith("bf16"),
        seeds=list(range(-(-ROW_SEEDS // size) * size)),
    )
    execution = {**(params.get("execution") or {}), "env_workers": workers}
    return {
        **params,
        "profiles": {**params["profiles"], SESSION_PROFILE: profile},
        "execution": execution,
    }


def run_rate(args: argparse.Namespace) -> int:
    """`envgen gpu probe rate`."""
    rate = pick_rate(read_bench(args.bench))
    write_json_atomic(args.out, rate)
    print(json.dumps(rate))
    return 0


def run_params(args: argparse.Namespace) -> int:
    """`envgen gpu probe params`."""
    params = session_params(read_params(args.params), read_rate(args.rate), args.base)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(yaml.safe_dump(params, sort_keys=False))
    profile, executor = load_settings(args.out, SESSION_PROFILE)  # checked as any params file
    print(
        f"[gpu probe] {args.out}: profile {SESSION_PROFILE}, cohorts of {profile.cohort} "
        f"({profile.cohort_kernels}, bf16 {profile.bf16_autocast}), seeds {profile.seeds}, "
        f"{executor.env_workers} env workers"
    )
    return 0


def read_rate(path: Path) -> dict[str, Any]:
    """A rate file of `probe rate` (call B reads call A's)."""
    try:
        rate = read_json(path)
    except (OSError, JSONInputError) as exc:
        raise ConfigError("rate", f"{path}: unreadable ({exc}); run call A again") from None
    if not isinstance(rate, dict) or not isinstance(rate.get("cohort_sps"), int | float):
        raise ConfigError("rate", f"{path}: not a rate file of `envgen gpu probe rate`")
    return rate
