"""`envgen gpu probe rate|params`: the rate a training call is sized from, and the params
file that trains at it. Plain JSON and YAML, no torch: these run on any machine.

`envgen gpu probe rate BENCH_JSON --out RATE_JSON` picks, from `envgen bench train
--cohort W --kernels ...`'s last JSON line, the fastest cohort and writes what a training call
needs: its W, kernel mode, precision, env workers and env steps/s, with the one-run
baseline of the same call beside it. `envgen gpu probe params RATE_JSON --out PARAMS`
writes params.yaml with one more profile that trains cohorts of that W in that mode, and
the bench's env worker count as `execution.env_workers`.
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
from envgen.json_input import JSONInputError
from envgen.json_input import read as read_json
from envgen.pipeline.params_stage import load_settings, read_params


def pick_rate(bench: dict[str, Any]) -> dict[str, Any]:
    """The fastest unpipelined cohort of `envgen bench train`'s JSON line, with the
    baseline of the same call: what `envgen gpu run --sps` and the plan take."""
    cohorts = [c for c in bench.get("cohorts") or [] if c.get("groups") == 1]
    if not cohorts:
        raise ConfigError("bench", "no unpipelined cohort in this bench JSON; time --cohort W")
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


SESSION_PROFILE = "gpu-session"
ROW_SEEDS = 10  # Table 1's seeds (paper section 4.1: 10 seeds per row)


def session_params(params: dict[str, Any], rate: dict[str, Any], base: str = "paper") -> dict:
    """params.yaml's mapping with one more profile, `SESSION_PROFILE`: `base` trained as
    cohorts of the rate's W in its kernel mode and precision, with enough seeds for whole
    cohorts of at least `ROW_SEEDS` (a cohort's seeds must all be there: `split_cohorts`).
    A call trains some of them (`gpu run --seeds`); the rest wait for later sessions.

    `execution.env_workers` becomes the bench's worker count: params.yaml's 1 is a CPU
    campaign's (one core per run), and a cohort stepping its W x 8 envs in one worker
    trains far below the rate that `gpu run --sps` sizes the call from (the H200 bench
    stepped them in 15)."""
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


def last_json_line(path: Path) -> dict[str, Any]:
    """The last line of `path` that is a JSON object: `envgen bench train` prints its
    result so far after every cohort, so the last one is the most complete, also when a
    later cohort failed (then no line after it is JSON, or a cut one is not)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ConfigError("bench", f"{path}: unreadable ({exc.strerror or exc})") from None
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    raise ConfigError(
        "bench",
        f"{path}: no JSON line; `envgen bench train --cohort W` prints one after each cohort "
        "(did the bench fail before its first cohort? read the log)",
    )


def run_rate(args: argparse.Namespace) -> int:
    """`envgen gpu probe rate`."""
    bench = last_json_line(args.bench)
    try:
        rate = pick_rate(bench)
    except (KeyError, TypeError, AttributeError) as exc:  # a field missing or malformed
        raise ConfigError(
            "bench",
            f"{args.bench}: the last JSON line is not bench train's ({type(exc).__name__}: {exc})",
        ) from None
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
