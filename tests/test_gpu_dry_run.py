"""`envgen gpu dry-run` (envgen.gpu.dry_run) and the compile allowance of `envgen gpu run`'s
planner (envgen.gpu.chunk): each call of the prepared session (results/gpu/next/) is
planned inside the 10-minute call limit with margin on a machine that takes 2 minutes to
start, call A's bench (a cold compile included) inside its own timeout, and the scripts
use the deadlines the plan assumes."""

import subprocess
import sys
from pathlib import Path

import pytest

from envgen.gpu import chunk, dry_run
from envgen.loop.config import RunConfig
from envgen.pipeline.jobs import Job

REPO = Path(__file__).resolve().parents[1]
NEXT = REPO / "results" / "gpu" / "next"


def _total(steps) -> float:
    return sum(step.seconds for step in steps)


@pytest.mark.parametrize(
    "sps, kernels", [(None, "graph"), (12_000.0, "graph"), (20_000.0, "compile"), (None, "eager")]
)
def test_each_call_fits_the_call_limit_with_margin_on_a_machine_that_starts_in_2_minutes(
    sps, kernels
):
    plan = dry_run.session(120.0, sps, 4, kernels)
    limit = dry_run.CALL_LIMIT_S - dry_run.CALL_MARGIN_S
    a = plan["a"]
    assert _total(a) <= min(limit, dry_run.CALL_A_DEADLINE_S)
    # the bench, with the compile cohort's cold compile, is planned whole inside its timeout
    install, checks, bench, _ = (step.seconds for step in a)
    assert bench <= dry_run.CALL_A_DEADLINE_S - install - checks - 5
    seconds = {step.name: step.seconds for step in dry_run.bench_steps(4, ("graph", "compile"))}
    assert seconds["cohort of 4, compile"] == seconds["cohort of 4, graph"] + chunk.COMPILE_S
    for key in ("b_warm", "b_own"):
        deadline, steps, _ = plan[key]
        assert deadline <= dry_run.CALL_B_DEADLINE_S < dry_run.CALL_LIMIT_S
        assert _total(steps) <= min(limit, deadline), key
    # the session's device time: the start, call A, then call B up to its DEADLINE
    assert 120.0 + _total(a) + plan["b_warm"][0] <= dry_run.SESSION_DEVICE_S


def test_call_b_trains_only_at_a_rate_that_finishes_inside_its_budget():
    _, own, needed = dry_run.session(120.0, None, 4, "graph")["b_own"]
    assert "NOT started" in own[-1].name  # at the measured eager rate, 3,879
    assert needed == pytest.approx(4e6 / (495 - chunk.STARTUP_S))  # README: about 9,200
    _, trained, _ = dry_run.session(120.0, needed + 1, 4, "graph")["b_own"]
    assert "trains" in trained[-1].name and _total(trained) <= 570
    _, compiled, needed_c = dry_run.session(120.0, needed + 1, 4, "compile")["b_own"]
    assert "NOT started" in compiled[-1].name  # the compile allowance does not fit at that
    assert needed_c == pytest.approx(4e6 / (495 - chunk.STARTUP_S - chunk.COMPILE_S))


def test_the_scripts_use_the_deadlines_the_dry_run_plans_with():
    a, b = (NEXT / "callA.sh").read_text(), (NEXT / "callB.sh").read_text()
    assert f"${{DEADLINE:-{dry_run.CALL_A_DEADLINE_S}}}" in a
    assert f"timeout $(( $(left) - {dry_run.CALL_A_BENCH_RESERVE_S} )) $E gpu probe kernels" in a
    assert "--rollouts 3 --cohort 4 --kernels eager,graph,compile" in a
    assert f"${{DEADLINE:-{dry_run.CALL_B_DEADLINE_S}}}" in b


def test_a_compile_cohort_is_planned_with_its_compile_allowance():
    config = RunConfig(method="original_only", original_only_steps=1_000_000, model="paper")
    graph = config.replace(cohort=2, cohort_kernels="graph")
    compiled = config.replace(cohort=2, cohort_kernels="compile")
    need = chunk.STARTUP_S + 2e6 / 10_000.0  # 260 s at 10,000 env steps/s
    for cfg, fits in ((graph, True), (compiled, False)):
        jobs = [Job(cfg, 0), Job(cfg, 1)]
        kept, refused = chunk.fitting_jobs(jobs, need + 1, 10_000.0)
        assert (kept == jobs) is fits and bool(refused) is not fits
    jobs = [Job(compiled, 0), Job(compiled, 1)]
    assert chunk.fitting_jobs(jobs, need + chunk.COMPILE_S + 1, 10_000.0) == (jobs, [])
    alone = config.replace(cohort=1)  # a run alone never compiles
    assert chunk.startup_seconds(alone.cohort_kernels) == chunk.STARTUP_S


def test_the_dry_run_command_prints_both_calls_without_torch_and_refuses_a_bad_start():
    cmd = [sys.executable, "-m", "envgen.cli", "gpu", "dry-run"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
    assert "call A (DEADLINE 390 s)" in done.stdout and "call B, in a session" in done.stdout
    assert "DOES NOT FIT" not in done.stdout
    bad = subprocess.run([*cmd, "--start-s", "-5"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "--start-s" in bad.stderr and "Traceback" not in bad.stderr
    code = "import sys, envgen.gpu.dry_run; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
