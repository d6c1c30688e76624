"""`envgen campaign handoff NAME`: hand the runs in flight to the next session or machine.

Checkpoints are git-ignored, so on a machine slower than a session is long (the
`confirm` campaign's runs take over 2 h each; docs/measurements.md, "Reruns") every
session would lose its runs in flight. A handoff waits for each running run's next
checkpoint (at most `--wait-s`), stops the campaign, and commits each unfinished run
with its latest checkpoint (about 5.5 MB for Crafter) and the LLM replies so far; `start`
on any up-to-date checkout resumes them to the same result (docs/agent.md,
"Reproducibility and resume"). The checkpoint stays in git history: hand off runs well
under way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envgen.campaign.failures import failures_file, read_failures, run_key
from envgen.campaign.gitcommit import commit_partial
from envgen.campaign.process import live_process, stop
from envgen.campaign.progress import DAMAGED, PARTIAL, RUNNING, JobState, job_states
from envgen.campaign.registry import Campaign
from envgen.campaign.run import load_campaign, reply_files
from envgen.pipeline.job_status import results_versions
from envgen.pipeline.plan import TablePlan
from envgen.store.manifest import LATEST_CHECKPOINT, is_sealed

POLL_S = 5.0
Log = Callable[[str], Any]


def distinct(states: list[JobState], state: str) -> list[JobState]:
    """The states in `state`, one per run directory (rows may share a run)."""
    found: dict[Path, JobState] = {}
    for s in states:
        if s.state == state:
            found.setdefault(s.run_dir, s)
    return list(found.values())


def in_flight(
    name: str, plan: TablePlan, runs_root: Path, versions: Mapping[str, int]
) -> list[JobState]:
    """The runs of campaign `name` training now: running, less those whose last attempt
    failed (`envgen.campaign.failures`), which write no checkpoint to wait for."""
    failures = read_failures(failures_file(name))
    return distinct(job_states(plan, runs_root, versions, alive=True, failures=failures), RUNNING)


def _mtime(run_dir: Path) -> float:
    try:
        return (run_dir / LATEST_CHECKPOINT).stat().st_mtime
    except OSError:
        return 0.0


def wait_for_checkpoints(name: str, running: list[JobState], wait_s: float, log: Log) -> None:
    """Until every run in `running` has written a checkpoint newer than now, finished or
    failed (neither writes one more), or `wait_s`."""
    started = time.time()
    before = {s.run_dir: _mtime(s.run_dir) for s in running}
    log(
        f"[handoff] waiting up to {wait_s:.0f} s for the next checkpoint of "
        f"{len(running)} run(s) in flight"
    )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not all(
        _settled(name, d, t, started) for d, t in before.items()
    ):
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    for run_dir, t in before.items():
        what = _settled(name, run_dir, t, started) or "no new checkpoint in time"
        log(f"[handoff] {run_dir}: {what}")


def _settled(name: str, run_dir: Path, checkpoint_mtime: float, started: float) -> str:
    """Why `run_dir` needs no more waiting, or "": a checkpoint newer than the one it had,
    sealed (a run writes no checkpoint at its end), or an attempt of campaign `name` that
    failed since `started`."""
    if _mtime(run_dir) > checkpoint_mtime:
        return "new checkpoint"
    if is_sealed(run_dir):
        return "finished"
    failure = read_failures(failures_file(name)).get(run_key(run_dir))
    return "its attempt failed" if failure and failure.at >= started else ""


def commit_partial_runs(name: str, states: list[JobState], log: Log, repo: Path) -> int:
    """Commit every partial run of `states` with its checkpoint and the cache files of the
    LLM replies it has recorded so far; returns how many. A damaged unfinished run (it
    would not resume) is named, not committed."""
    for s in distinct(states, DAMAGED):
        if not is_sealed(repo / s.run_dir):
            log(f"[handoff] {s.run_dir}: not handed off: {s.problem}")
    count = 0
    for s in distinct(states, PARTIAL):
        message = (
            f"campaign {name}: handoff of {s.row} seed {s.job.seed} at step {s.steps:,} of "
            f"{s.total_steps:,} (`envgen campaign start {name}` resumes it)"
        )
        replies = reply_files(repo / s.run_dir, repo)
        error = commit_partial(s.run_dir, message, repo, replies=replies)
        log(f"[handoff] commit failed for {s.run_dir}: {error}" if error else f"[{message}]")
        count += not error
    return count


def handoff(
    campaign: Campaign, params: Path, runs_root: Path, wait_s: float, log: Log = print
) -> int:
    """Wait for checkpoints, stop `campaign`, commit its unfinished runs; exit code."""
    plan = load_campaign(campaign.request(params, runs_root))[0]
    versions = results_versions()
    process = live_process(campaign)
    if process is not None:
        running = in_flight(campaign.name, plan, runs_root, versions)
        if running and wait_s > 0:
            wait_for_checkpoints(campaign.name, running, wait_s, log)
        stop(campaign, wait_s=60.0)
    count = commit_partial_runs(
        campaign.name, job_states(plan, runs_root, versions, alive=False), log, Path(".")
    )
    log(
        f"[handoff] {count} unfinished run(s) committed with their checkpoints; "
        f"`envgen campaign start {campaign.name}` on an up-to-date checkout resumes them"
        if count
        else "[handoff] no unfinished run with a checkpoint: nothing to hand off"
    )
    return 0
