"""`envgen gpu dry-run`: the planned seconds of each step of the prepared session's two
calls (results/gpu/next/callA.sh, callB.sh) on a machine that takes `--start-s` to start.

Why: a call is killed at 10 minutes and a session has 15 minutes of device time, machine
starts included; a step that does not fit should be found here, on the CPU. The steps
follow the scripts' own arithmetic (tests/test_gpu_dry_run.py checks their DEADLINEs and
timeouts against the constants below) and take their seconds from measured rates
(`envgen.pipeline.gpu_plan`; a mode with no rate of its own plans at eager's) and from
`envgen gpu run`'s start-up allowances (`envgen.gpu.chunk.startup_seconds`). No torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence

from envgen.gpu.chunk import COMPILE_S, STARTUP_S, startup_seconds
from envgen.gpu.run_args import BUDGET_MIN, PACK_RESERVE_S
from envgen.pipeline import gpu_plan

CALL_LIMIT_S = 600.0  # the device machine kills a command at 10 minutes
CALL_MARGIN_S = 30.0  # a call planned to end this long before the limit at the latest
SESSION_DEVICE_S = 900.0  # a session's device time: every start, call and idle wait
CALL_A_DEADLINE_S = 390  # callA.sh's default DEADLINE
CALL_A_BENCH_RESERVE_S = 300  # callA.sh: the kernel checks' timeout leaves this for the bench
CALL_B_DEADLINE_S = 595  # callB.sh's default DEADLINE (at most this: README step 3)
# Measured (results/gpu/2026-11-27-h200-steady/call.log): the wheels installed and the
# versions printed took 7 s; its first bench 196 s, 150 s of it rollouts, for 3 setups.
INSTALL_S = 10.0
SETUP_S = 15.0  # a bench setup beyond its rollouts: process start, torch, envs, capture
TOOL_S = 3.0  # `gpu probe rate|params`: python without torch
PACK_S = 15.0  # `gpu run` packing a cohort's sealed runs (no checkpoints)
ROLLOUT_STEPS = 8 * 512  # Table 9's rollout per seed
TIMED_ROLLOUTS = 3  # callA.sh's --rollouts
RUN_STEPS = 1_000_000  # Table 1's PPO row, per seed


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    seconds: float
    note: str = ""


def cohort_sps(size: int, kernels: str) -> float:
    """A bf16 paper cohort's planning rate: its mode's measurement, else eager's (a
    captured update should be no slower), else one run's."""
    for mode in (kernels, "eager"):
        found = gpu_plan.cohort_rate("paper", True, size, kernels=mode)
        if found:
            return found[0]
    return gpu_plan.gpu_rate("paper", None, 1)[0]


def bench_steps(size: int, modes: Sequence[str], rollouts: int = TIMED_ROLLOUTS) -> list[Step]:
    """`envgen bench train --concurrency 1 --cohort W --kernels MODES`: one run, then a
    cohort of W per mode, each a warm-up rollout and `rollouts` timed ones."""
    run_sps = gpu_plan.gpu_rate("paper", None, 1)[0]
    steps = [Step("one run", SETUP_S + (1 + rollouts) * ROLLOUT_STEPS / run_sps)]
    for kernels in modes:
        sps = cohort_sps(size, kernels)
        compile_s = COMPILE_S if kernels == "compile" else 0.0
        rollout_s = (1 + rollouts) * size * ROLLOUT_STEPS / sps
        note = f"{sps:,.0f} env steps/s" + (f", compile {COMPILE_S:.0f} s" if compile_s else "")
        steps.append(Step(f"cohort of {size}, {kernels}", SETUP_S + compile_s + rollout_s, note))
    return steps


def call_a(size: int) -> list[Step]:
    """callA.sh's steps: install, kernel checks (they run to their timeout at the
    latest), the bench (planned whole; its timeout in the note), the rate file."""
    deadline = CALL_A_DEADLINE_S
    checks = deadline - INSTALL_S - CALL_A_BENCH_RESERVE_S
    bench = bench_steps(size, ("eager", "graph", "compile"))
    bench_s = sum(s.seconds for s in bench)
    timeout = deadline - INSTALL_S - checks - 5
    parts = "; ".join(f"{s.name} {s.seconds:.0f} s" for s in bench)
    return [
        Step("install wheels, versions", INSTALL_S),
        Step("gpu probe kernels (graph; 4, 8; float32, bf16)", checks, "its timeout"),
        Step("bench train (bf16, 1 run, cohort eager/graph/compile)", bench_s, parts),
        Step("gpu probe rate", TOOL_S, f"bench timeout {timeout:.0f} s"),
    ]


def call_b(deadline: float, size: int, kernels: str, sps: float) -> tuple[list[Step], float]:
    """callB.sh's steps and the rate at which its cohort would start: `gpu run` starts
    a cohort of `size` x `RUN_STEPS` only if it ends inside the budget at `sps`
    (`envgen.gpu.chunk.fitting_jobs`), else the call trains nothing."""
    budget_min = min(BUDGET_MIN, (deadline - INSTALL_S - TOOL_S - 5) / 60)
    budget_s = budget_min * 60 - min(PACK_RESERVE_S, budget_min * 15)
    start = startup_seconds(kernels)
    train = start + size * RUN_STEPS / sps
    needed = size * RUN_STEPS / (budget_s - start) if budget_s > start else math.inf
    cohort = f"gpu run: cohort of {size} ({kernels})"
    if train <= budget_s:
        note = f"start-up {start:.0f} s, budget {budget_s:.0f} s"
        run = Step(f"{cohort} trains", train + PACK_S, note)
    else:
        note = f"needs {train:.0f} s of its {budget_s:.0f} s budget at {sps:,.0f} env steps/s"
        run = Step(f"{cohort} NOT started", PACK_S, note)
    return [Step("install wheels", INSTALL_S), Step("gpu probe params", TOOL_S), run], needed


def session(start_s: float, sps: float | None, size: int = 4, kernels: str = "graph") -> dict:
    """Both calls on one machine started once (call B at once after A, its DEADLINE what
    the device time leaves less 30 s, at most `CALL_B_DEADLINE_S`), and call B in a
    session of its own for comparison."""
    a = call_a(size)
    a_s = sum(s.seconds for s in a)
    rate = sps or cohort_sps(size, kernels)
    warm_deadline = min(CALL_B_DEADLINE_S, SESSION_DEVICE_S - start_s - a_s - 30)
    b_warm, need_warm = call_b(warm_deadline, size, kernels, rate)
    own_deadline = min(CALL_B_DEADLINE_S, SESSION_DEVICE_S - start_s - 30)
    b_own, need_own = call_b(own_deadline, size, kernels, rate)
    return {
        "a": a,
        "b_warm": (warm_deadline, b_warm, need_warm),
        "b_own": (own_deadline, b_own, need_own),
        "rate": rate,
    }


def _print_call(title: str, steps: list[Step], deadline: float) -> None:
    total = sum(s.seconds for s in steps)
    print(f"{title} (DEADLINE {deadline:.0f} s)")
    for s in steps:
        print(f"  {s.seconds:6.0f} s  {s.name}" + (f"  [{s.note}]" if s.note else ""))
    fits = "fits" if total <= CALL_LIMIT_S - CALL_MARGIN_S else "DOES NOT FIT"
    print(
        f"  {total:6.0f} s  in all: {fits} the {CALL_LIMIT_S:.0f} s call limit less "
        f"{CALL_MARGIN_S:.0f} s"
    )


def run(args: argparse.Namespace) -> int:
    """`envgen gpu dry-run`."""
    plan = session(args.start_s, args.sps, args.cohort, args.kernels)
    a_total = sum(s.seconds for s in plan["a"])
    print(
        f"machine start {args.start_s:.0f} s; cohort of {args.cohort} ({args.kernels}) at "
        f"{plan['rate']:,.0f} env steps/s; start-up {STARTUP_S:.0f} s"
        + (f" + compile {COMPILE_S:.0f} s" if args.kernels == "compile" else "")
    )
    _print_call("call A", plan["a"], CALL_A_DEADLINE_S)
    for key, where in (
        ("b_warm", "after A on the warm machine"),
        ("b_own", "in a session of its own"),
    ):
        deadline, steps, needed = plan[key]
        _print_call(f"call B, {where}", steps, deadline)
        print(f"           (a cohort starts at {needed:,.0f} env steps/s or more)")
    used = args.start_s + a_total + plan["b_warm"][0]
    print(f"session: start + A + B's DEADLINE = {used:.0f} s of {SESSION_DEVICE_S:.0f} s")
    return 0
