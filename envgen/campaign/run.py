"""A campaign session: `start` it detached, or `run` it here; train the missing runs, commit
each one as it finishes.

Jobs go to the executor seed by seed (seed 0 of every row, then seed 1, ...), so a
campaign stopped half way has every row at about the same number of seeds, which is
what its claims compare. Finished runs of the current code are skipped; a partial one
resumes from its checkpoint (`envgen.pipeline.jobs.run_job`). One process per campaign
runs at a time (`envgen.campaign.process`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.campaign import process
from envgen.campaign.failures import failures_file, record
from envgen.campaign.gitcommit import commit_run, is_committed
from envgen.campaign.machines import reuse_lines, row_reuse
from envgen.campaign.progress import AnyJob, is_finished, row_jobs, version_of
from envgen.campaign.registry import PROCESS_MARK, Campaign, RunRequest
from envgen.envs.vector import usable_cores
from envgen.llm.cache import DEFAULT_CACHE_DIR
from envgen.pipeline.executor import execute
from envgen.pipeline.job_status import (
    CONFIG_ERROR,
    DONE,
    FAILED,
    JobResult,
    job_dir,
    results_versions,
)
from envgen.pipeline.jobs import Settings
from envgen.pipeline.params_stage import check_device, load_settings
from envgen.pipeline.plan import Job, TablePlan, plan_file
from envgen.pipeline.recording import llm_spec
from envgen.store.run_dir import RunDir

Log = Callable[[str], Any]


def seed_order(plan: TablePlan) -> list[AnyJob]:
    """Every distinct trained job, by seed, then initial set, then row order."""
    jobs: dict[tuple[str, int], tuple[tuple[int, int, int], AnyJob]] = {}
    for index, (_, job) in enumerate(row_jobs(plan)):
        initial_set = job.config.initial_set if isinstance(job, Job) else 0
        jobs.setdefault(job.key, ((job.seed, initial_set, index), job))
    return [job for _, job in sorted(jobs.values(), key=lambda entry: entry[0])]


def pending_jobs(plan: TablePlan, runs_root: Path, versions: Mapping[str, int]) -> list[AnyJob]:
    """`seed_order`'s jobs that have not finished under the current code."""
    return [
        job
        for job in seed_order(plan)
        if not is_finished(job_dir(job, runs_root), version_of(job, versions))
    ]


def reply_files(run_dir: Path, repo: Path = Path(".")) -> list[Path]:
    """The cache files (relative to `repo`) that hold the replies of the run's LLM calls
    (its LLM call log): committed with the run, so it replays without the model. A call
    served by its protocol slot has no file of its own and is skipped."""
    calls_path = RunDir(run_dir).llm_calls
    if not calls_path.is_file():
        return []
    files = []
    for call in json_input.loads(calls_path.read_bytes(), calls_path):
        key = call.get("key") if isinstance(call, dict) else None
        if not (isinstance(key, str) and re.fullmatch(r"[0-9a-f]{64}", key)):
            continue  # not a cache key: verify reports the run; nothing to commit for it
        path = DEFAULT_CACHE_DIR / f"{key}.json"
        if (repo / path).is_file() and path not in files:
            files.append(path)
    return files


def commit_hook(
    campaign: str, plan: TablePlan, log: Log, repo: Path = Path(".")
) -> Callable[[JobResult], bool]:
    """A per-result callback that commits each finished run, "campaign <name>: <row> seed
    <K>: score <X>%"; a failed commit is logged. It returns whether the result was a
    finished run now committed (or already so)."""
    rows = {job.key: row for row, job in reversed(row_jobs(plan))}  # the first row of each

    def on_result(result: JobResult) -> bool:
        if result.status != DONE:
            return False
        run_dir = Path(result.run_dir)  # relative to `repo` (the working directory)
        final = json.loads(RunDir(repo / run_dir).final_metrics.read_text(encoding="utf-8"))
        row, seed, score = rows.get(result.key, "?"), result.key[1], float(final["score"])
        message = f"campaign {campaign}: {row} seed {seed}: score {score:.2f}%"
        error = commit_run(run_dir, message, repo, replies=reply_files(repo / run_dir, repo))
        log(f"[campaign] commit failed for {run_dir}: {error}" if error else f"[{message}]")
        return not error

    return on_result


def failure_hook(
    campaign: str, log: Log, then: Callable[[JobResult], Any] | None
) -> Callable[[JobResult], Any]:
    """A per-result callback that records failed attempts for `status`
    (`envgen.campaign.failures`), then calls `then`; a record that cannot be written is
    logged, and training goes on."""
    path = failures_file(campaign)

    def on_result(result: JobResult) -> Any:
        try:
            record(path, result)
        except OSError as exc:
            log(f"[campaign] could not record the result in {path}: {exc.strerror or exc}")
        return then(result) if then is not None else None

    return on_result


def run_campaign(request: RunRequest, log: Log = print) -> int:
    """Train the pending jobs; 0 when all finished, 2 when some still failed."""
    plan, profile, executor = load_campaign(request)
    codes = results_versions()
    committing = commit_hook(request.campaign, plan, log) if request.commit else None
    if committing is not None:  # the finished runs a previous session left uncommitted
        count = 0
        for job in seed_order(plan):
            run_dir = job_dir(job, request.runs_root)
            if is_finished(run_dir, version_of(job, codes)) and not is_committed(run_dir):
                count += committing(JobResult(job.key, DONE, str(run_dir)))
        if count:
            log(f"[campaign] committed {count} finished run(s) left uncommitted")
    jobs = pending_jobs(plan, request.runs_root, codes)
    log(f"[campaign] {request.campaign}: {len(jobs)} of {len(seed_order(plan))} runs to train")
    if not jobs:
        return 0
    check_device(profile, executor)
    hook = failure_hook(request.campaign, log, committing)
    mode = "fill" if request.local_model else "replay"
    model = {"local_model": request.local_model} if request.local_model else {}
    with llm_spec(mode, DEFAULT_CACHE_DIR, **model) as llm:
        settings = Settings.for_profile(profile, request.runs_root, llm, executor.env_workers)
        results = execute(jobs, settings, executor, log, on_result=hook)
    failed = [r for r in results.values() if r.status in (FAILED, CONFIG_ERROR)]
    log(f"[campaign] {request.campaign}: session over, {len(failed)} run(s) failed")
    return 2 if failed else 0


def load_campaign(request: RunRequest) -> tuple[TablePlan, Any, Any]:
    """(plan, profile, executor config) of the campaign, params.yaml checked first."""
    profile, executor = load_settings(request.params, request.profile)
    if request.seeds is not None:  # seeds are not part of a run's config: hashes stay
        profile = dataclasses.replace(profile, seeds=request.seeds)
    if request.workers is not None:
        executor = dataclasses.replace(executor, workers=request.workers)
    return plan_file(request.table, profile), profile, executor


def start(c: Campaign, params: Path, runs_root: Path, workers: int | None, commit: bool) -> int:
    """Launch the campaign detached; refused while one runs (it holds the lock)."""
    lock = process.acquire(c)
    try:
        # mistakes show here, not in the log
        plan, _, executor = load_campaign(c.request(params, runs_root, workers, commit))
        codes = results_versions()
        pending = pending_jobs(plan, runs_root, codes)
        reuse = reuse_lines(row_reuse(plan, runs_root, codes, is_committed))
        if not pending and not commit:
            print(f"campaign {c.name}: all {len(seed_order(plan))} runs finished; nothing to train")
            print("\n".join(reuse))
            return 0
        count = workers or executor.local_workers(usable_cores(), 0)
        command = [sys.executable, "-m", PROCESS_MARK, "run", c.name, "--params", str(params)]
        command += ["--runs-root", str(runs_root), "--workers", str(count)]
        command += [] if commit else ["--no-commit"]
        pid = process.launch(c, command, lock, count)
    finally:
        os.close(lock)  # the launched process holds it now
    print(
        f"campaign {c.name}: started pid {pid}, {len(pending)} of "
        f"{len(seed_order(plan))} runs to train, {count} at once "
        f"({'each committed as it finishes' if commit else 'not committed'}); log {c.log}; "
        f"`envgen campaign status {c.name}`; stop: `envgen campaign stop {c.name}`"
    )
    print("\n".join(reuse))
    return 0


def run(
    c: Campaign,
    params: Path,
    runs_root: Path,
    workers: int | None,
    commit: bool,
    lock_fd: int | None = None,
) -> int:
    """The session in the foreground (what `start` launches, handing over its lock as
    `lock_fd`): holds the lock, ends its workers on Ctrl-C or SIGTERM, clears its pid
    file when it ends."""
    lock = process.acquire(c) if lock_fd is None else process.adopt(c, lock_fd)
    os.environ.update(c.environment())  # `start` set them already; a foreground run here
    try:
        process.write_process(c, process.Process(os.getpid(), workers or 0))
        process.end_group_on_signal()
        return run_campaign(c.request(params, runs_root, workers, commit))
    finally:
        recorded = process.read_process(c)
        if recorded is not None and recorded.pid == os.getpid():
            c.pid_file.unlink(missing_ok=True)
        os.close(lock)
