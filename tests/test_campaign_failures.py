"""`envgen campaign status` shows a run whose last attempt failed as failed, not running.

A run whose resume was refused (its checkpoint's counters) failed at once while the
campaign process went on with the others; its files were recent, so status read
"running 31%". The process now records each failed attempt (`envgen.campaign.failures`)
and status shows it until the run writes again or finishes.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
import types
from pathlib import Path

import pytest

from envgen.agents.checkpoint_counters import checked_counters
from envgen.campaign import handoff
from envgen.campaign.failures import failures_file, read_failures
from envgen.campaign.process import Process
from envgen.campaign.progress import FAILED_RUN, RUNNING, job_states
from envgen.campaign.run import failure_hook, load_campaign
from envgen.campaign.status import status_text
from envgen.errors import EnvGenError
from envgen.pipeline.job_status import DONE, FAILED, JobResult, job_dir, results_versions
from tests.test_campaign import CPU, REPO, ROWS, jobs_by_row, request, synthetic_store


@pytest.fixture(scope="module")
def plan():
    return load_campaign(request(Path("unused")))[0]


def _reason(exc: Exception) -> str:
    """A job's failure reason, as `envgen.pipeline.jobs.run_job` writes it."""
    return traceback.format_exception_only(exc)[-1].strip()


def _state(plan, codes, root: Path, job):
    failures = read_failures(failures_file("cpu"))
    states = job_states(plan, root, codes, alive=True, failures=failures)
    return next(s for s in states if s.job.key == job.key), states


def test_a_refused_resume_reads_refused_until_the_run_writes_again(plan, tmp_path, monkeypatch):
    codes = results_versions()
    synthetic_store(plan, codes, tmp_path / "runs")
    monkeypatch.chdir(tmp_path)  # the campaign's state dir (.envgen/campaigns) lies here
    job = jobs_by_row(plan)[ROWS[2]][0]  # unfinished, written just now: "running 50%"
    run_dir = job_dir(job, tmp_path / "runs")
    checkpoint = run_dir / "checkpoints" / "latest.pt"
    with pytest.raises(EnvGenError) as err:
        checked_counters({"global_step": -100_000}, checkpoint, 64)
    log: list[str] = []
    hook = failure_hook("cpu", log.append, None)
    hook(JobResult(job.key, FAILED, str(run_dir), _reason(err.value)))

    found, states = _state(plan, codes, tmp_path / "runs", job)
    assert found.state == FAILED_RUN
    text = status_text(CPU, states, Process(123, 2), 2)
    assert "running 50%" not in text and f"{ROWS[2]}: 1 failed, 4 missing (of 5)" in text
    assert (
        "resume refused (not running; tried again on the next start): "
        f"{checkpoint}: counter global_step is -100000, not a whole number >= 0"
    ) in text

    # any other failure says failed; a retry that writes is running again
    hook(JobResult(job.key, FAILED, str(run_dir), _reason(RuntimeError("out of luck"))))
    found, states = _state(plan, codes, tmp_path / "runs", job)
    assert "failed (not running; tried again on the next start): out of luck" in status_text(
        CPU, states, Process(123, 2), 2
    )
    later = read_failures(failures_file("cpu"))[f"{run_dir.parent.name}/{run_dir.name}"].at + 5
    os.utime(run_dir / "metrics.jsonl", (later, later))
    assert _state(plan, codes, tmp_path / "runs", job)[0].state == RUNNING

    hook(JobResult(job.key, DONE, str(run_dir)))  # finished: the record goes
    assert read_failures(failures_file("cpu")) == {} and log == []


def _fail(job, run_dir: Path) -> None:
    """The campaign process records an attempt of `job` that failed."""
    failure_hook("cpu", print, None)(JobResult(job.key, FAILED, str(run_dir), "out of luck"))


def test_a_handoff_waits_for_no_checkpoint_of_a_run_whose_last_attempt_failed(
    plan, tmp_path, monkeypatch
):
    """A resume that failed left the run's files recent: the handoff took it for running
    and waited its whole --wait-s for a checkpoint that could not come."""
    synthetic_store(plan, results_versions(), tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    job = jobs_by_row(plan)[ROWS[2]][0]  # unfinished, written just now
    run_dir = job_dir(job, tmp_path / "runs")
    waited: list[list[Path]] = []

    def wait(name, running, wait_s, log):
        waited.append([s.run_dir for s in running])

    monkeypatch.setattr(handoff, "live_process", lambda campaign: Process(123, 2))
    monkeypatch.setattr(handoff, "stop", lambda campaign, wait_s: None)
    monkeypatch.setattr(handoff, "commit_partial_runs", lambda *args: 0)
    monkeypatch.setattr(handoff, "wait_for_checkpoints", wait)
    cpu = dataclasses.replace(CPU, table=REPO / CPU.table)
    for _ in range(2):  # before the failure is recorded, then after
        assert handoff.handoff(cpu, REPO / "params.yaml", tmp_path / "runs", 900, print) == 0
        _fail(job, run_dir)
    assert run_dir in waited[0] and all(run_dir not in w for w in waited[1:])


def test_a_run_whose_attempt_fails_during_the_wait_ends_it(plan, tmp_path, monkeypatch):
    codes = results_versions()
    synthetic_store(plan, codes, tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    job = jobs_by_row(plan)[ROWS[2]][0]
    run_dir = job_dir(job, tmp_path / "runs")
    (state,) = [s for s in handoff.in_flight("cpu", plan, tmp_path / "runs", codes) if s.job == job]
    polls: list[float] = []

    def poll(seconds: float) -> None:  # the attempt fails during the first poll
        polls.append(seconds)
        _fail(job, run_dir)

    monkeypatch.setattr(handoff, "time", types.SimpleNamespace(
        time=time.time, monotonic=time.monotonic, sleep=poll
    ))  # fmt: skip
    log: list[str] = []
    handoff.wait_for_checkpoints("cpu", [state], 900, log.append)
    assert len(polls) == 1 and log[-1] == f"[handoff] {run_dir}: its attempt failed"
