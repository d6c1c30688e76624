"""Train a profile's rows for at most a wall-clock budget, resumable the next time.

`run_chunk` starts the training in a child process (`python -m envgen.gpu.chunk`, its own
session: the rows' jobs, planned from the replication files under the profile and
filtered by row name and seed, through the pipeline's executor into the run store) and
ends it, and every process it started, when the budget is spent. Runs continue from
their latest checkpoint in the next call (`execute_run` resumes; a checkpoint is atomic).
Every run checkpoints at least every `CHECKPOINT_MINUTES`: a chunk loses at most that.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.gpu.run_args import CHECKPOINT_MINUTES, seed_list
from envgen.input_checks import number_in, unknown_key, writable_dir
from envgen.pipeline import gpu_plan
from envgen.pipeline.executor import execute
from envgen.pipeline.job_status import CONFIG_ERROR, FAILED
from envgen.pipeline.jobs import LLMSpec, Settings, split_cohorts
from envgen.pipeline.params_stage import load_settings
from envgen.pipeline.plan import plan_file, unique_jobs

REPO = Path(__file__).resolve().parents[2]
GRACE_S = 15.0  # after SIGTERM, before SIGKILL


def check_store(store: Path) -> Path:
    """The run store, refused inside the repository (the working tree sent in is small
    and read-only in spirit; runs live beside it)."""
    store = store.resolve()
    if store == REPO or REPO in store.parents:
        raise ConfigError(
            "--store", f"{store} is inside the repository {REPO}; give a path outside"
        )
    writable_dir(store, "--store").mkdir(parents=True, exist_ok=True)
    return store


def selected_jobs(args: argparse.Namespace) -> tuple[Any, Any, list]:
    """(profile, executor, jobs) of `args`: the profile's rows of the replication files,
    only `--row` and `--seeds` where given. The parent calls it too, before the child:
    a mistake is one line there, not a traceback from the child."""
    profile, executor = load_settings(args.params, args.profile)
    plans = [plan_file(path, profile) for path in args.tables]
    names = {row.name for plan in plans for row in plan.rows}
    for row in args.row or ():
        if row not in names:
            raise unknown_key("--row", row, names, "row")
    rows = set(args.row or ())
    jobs = [
        job
        for plan in plans
        for row in plan.rows
        if not rows or row.name in rows
        for job in row.jobs
        if args.seeds is None or job.seed in args.seeds
    ]
    if not jobs and args.seeds is not None:
        seeds = ",".join(map(str, sorted(args.seeds)))
        raise ConfigError("--seeds", f"no run of the chosen rows has seed {seeds}")
    return profile, executor, unique_jobs(jobs)  # a row shared by tables trains once


def child_command(args: argparse.Namespace, budget_s: float) -> list[str]:
    cmd = [sys.executable, "-m", "envgen.gpu.chunk", args.profile, *map(str, args.tables)]
    cmd += ["--store", str(args.store), "--params", str(args.params)]
    for row in args.row or ():
        cmd += ["--row", row]
    if args.seeds is not None:
        cmd += ["--seeds", ",".join(map(str, sorted(args.seeds)))]
    cmd += ["--sps", str(args.sps)] if args.sps else []
    return cmd + ["--budget-s", str(budget_s), "--checkpoint-minutes", str(args.checkpoint_minutes)]


def run_chunk(args: argparse.Namespace, budget_s: float) -> str:
    """Train until done or `budget_s` seconds; returns "done", "budget" or "failed (rc)"."""
    child = subprocess.Popen(child_command(args, budget_s), start_new_session=True)
    try:
        rc = child.wait(timeout=max(budget_s, 1.0))
    except subprocess.TimeoutExpired:
        _stop(child)
        return "budget"
    return "done" if rc == 0 else f"failed ({rc})"


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM the child's session, then SIGKILL what is left after `GRACE_S`."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        time.sleep(0.5)  # pool workers of the session end with their parent


def main(argv: Sequence[str] | None = None) -> int:
    """The child: plan, filter, execute (`envgen gpu run` starts it)."""
    parser = argparse.ArgumentParser(prog="python -m envgen.gpu.chunk")
    parser.add_argument("profile")
    parser.add_argument("tables", type=Path, nargs="+")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml")
    parser.add_argument("--row", action="append")
    parser.add_argument("--seeds", type=seed_list)
    parser.add_argument(
        "--checkpoint-minutes", type=number_in(0, math.inf), default=CHECKPOINT_MINUTES
    )
    parser.add_argument("--budget-s", type=number_in(0, math.inf), default=math.inf)
    parser.add_argument("--sps", type=number_in(0, math.inf))
    args = parser.parse_args(argv)
    profile, executor, jobs = selected_jobs(args)
    refused: list[str] = []
    if profile.device.startswith("cuda"):  # the rates the rule takes are a GPU's
        jobs, refused = fitting_jobs(jobs, args.budget_s, args.sps)
    for line in refused:
        print(f"[gpu run] not started: {line}", flush=True)
    llm = LLMSpec("replay", str(REPO / "data" / "llm_cache"))
    settings = Settings.for_profile(profile, args.store, llm, executor.env_workers)
    settings = dataclasses.replace(settings, checkpoint_minutes=args.checkpoint_minutes)
    results = execute(jobs, settings, executor)
    return 1 if any(r.status in (FAILED, CONFIG_ERROR) for r in results.values()) else 0


STARTUP_S = 60.0
"""Seconds a cohort or run needs before its first timed rollout: process, environments,
Crafter-EnvGen's compile, the warm-up rollout and the policy step's graph capture (the
H200 bench's cohort of 8 took about 40 s to its first timed rollout)."""

COMPILE_S = 120.0
"""Seconds more at the start of a cohort in "compile" kernels: inductor compiling each
seed's forward, loss and backward before the first update, always cold on the device (no
call carries the git-ignored `.envgen/compile-cache/` in). Not measured: twice the
probe's minute per compilation (`envgen gpu probe kernels --help`), so that a call does
not start a 1M-step run that its compile leaves unfinished at the budget."""


def startup_seconds(kernels: str = "eager") -> float:
    """`STARTUP_S`, plus `COMPILE_S` for a cohort in "compile" kernels."""
    return STARTUP_S + (COMPILE_S if kernels == "compile" else 0.0)


def fitting_jobs(jobs: list, budget_s: float, sps: float | None) -> tuple[list, list[str]]:
    """The jobs, one cohort or run after another, whose every run reaches its final step
    inside `budget_s` at `sps` env steps/s per GPU (else the plan's measured rate);
    a run that cannot finish is not started (returned as a line saying why)."""
    if not math.isfinite(budget_s):
        return jobs, []
    cohorts, rest = split_cohorts(jobs)
    units = [list(c) for c in cohorts] + [[job] for job in rest]
    kept, refused, used = [], [], 0.0
    for unit in units:
        config = getattr(unit[0], "config", None)
        if config is None:  # the Random row: no GPU, seconds
            kept += unit
            continue
        measured = gpu_plan.cohort_rate(*gpu_plan.cohort_kind(config))
        rate = sps or (measured[0] if config.cohort > 1 and measured else None)
        rate = rate or gpu_plan.gpu_rate(config.model, None, 1)[0]
        kernels = config.cohort_kernels if config.cohort > 1 else "eager"
        need = startup_seconds(kernels) + config.total_steps * len(unit) / rate
        if used + need <= budget_s:
            kept += unit
            used += need
        else:
            seeds = ",".join(str(job.seed) for job in unit)
            refused.append(
                f"{config.config_hash()} seed(s) {seeds}: {config.total_steps:,} steps each "
                f"need about {need:,.0f} s at {rate:,.0f} env steps/s; "
                f"{budget_s - used:,.0f} s left"
            )
    return kept, refused


if __name__ == "__main__":
    sys.exit(main())
