"""A campaign's runs as the run store shows them: state per (row, seed), ETA, runs.json.

Nothing here trains. A run is finished as `envgen.pipeline.jobs` decides: sealed, of the
current results version (else `stale`: it will be redone); a finished run whose files no
longer match its manifest is `damaged`, naming the file. A campaign in progress collects
into a runs.json whose rows list the seeds finished so far, each saying how many of its
planned seeds that is; a row with none is `not_started`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.campaign.failures import Failure, run_key
from envgen.errors import EnvGenError
from envgen.files import write_json_atomic
from envgen.pipeline.job_status import DONE, JobResult, job_dir, job_version_key
from envgen.pipeline.plan import TRAIN, Job, RandomJob, TablePlan
from envgen.pipeline.profile import Profile
from envgen.pipeline.results import metrics_and_scores, table_results
from envgen.store.manifest import LATEST_CHECKPOINT, is_sealed, verify_run
from envgen.store.provenance import last_session_step, read_provenance, recorded_version, summary
from envgen.store.run_dir import RunDir, read_json

FINISHED, RUNNING, STALE, MISSING = "done", "running", "stale", "missing"
PARTIAL = "partial"  # a checkpoint, no live process: it resumes
DAMAGED = "damaged"  # a run file holds what no run writes; `JobState.problem` says which
FAILED_RUN = "failed"  # its last attempt failed, nothing written since (`failures`)
NOT_STARTED = "not_started"  # runs.json status of a campaign row with no finished seed
RUNNING_WINDOW_S = 900.0  # a run of a live campaign that wrote within this is running
# Rollouts whose steps over time give a running run's speed: about 6 minutes of a `cpu`
# profile run (4,096 steps a rollout at about 350 steps/s on 2 cores).
SPEED_WINDOW = 30
AnyJob = Job | RandomJob


@dataclasses.dataclass(frozen=True)
class JobState:
    """One (row, seed) of a campaign in the run store."""

    row: str
    """The row's label (replication file)."""
    job: AnyJob
    """The job behind it."""
    run_dir: Path
    """`<runs_root>/<hash>/seed-<K>`."""
    state: str
    """done | running | partial | failed | stale | damaged | missing (the constants above)."""
    steps: int
    """Env steps done: a finished run's global_steps, a running one's last logged step, a
    partial one's checkpoint step (where it resumes)."""
    total_steps: int
    """Env steps the run trains in all (`RunConfig.trained_steps`)."""
    speed: float | None
    """Measured env steps/s: a finished run's steps in its last session over its `wall_s`
    (which counts from the resume); a running one's over its last `SPEED_WINDOW` rollouts."""
    score: float | None = None
    """A finished run's score (%)."""
    committed: bool | None = None
    """Whether a finished run is committed to git; None when not asked or not finished."""
    provenance: str | None = None
    """One line of the run's provenance (machine, sessions, commit); None without."""
    problem: str | None = None
    """Why a damaged run's files cannot be read (its file and field)."""


def version_of(job: AnyJob, versions: Mapping[str, int]) -> str:
    return versions[job_version_key(job)]


def is_finished(run_dir: Path, version: int) -> bool:
    """Sealed and of the current results version: what `run_job` would not redo."""
    return is_sealed(run_dir) and recorded_version(run_dir) == version


def _provenance(run_dir: Path) -> tuple[str | None, int | None]:
    """(one line of the run's provenance, or why it cannot be read; the env step its
    last session started at, None where the file cannot say), from one read."""
    try:
        data = read_provenance(run_dir)
        if not data:
            return None, 0
        path = RunDir(run_dir).provenance
        return summary(data, path), last_session_step(data, path)
    except EnvGenError as exc:
        return f"unreadable ({exc})", None


def row_jobs(plan: TablePlan) -> list[tuple[str, AnyJob]]:
    """(row label, job) of every trained row, in the table's order."""
    return [(row.name, job) for row in plan.rows if row.kind == TRAIN for job in row.jobs]


def job_states(
    plan: TablePlan,
    runs_root: Path,
    versions: Mapping[str, int],
    alive: bool,
    committed: Callable[[Path], bool] | None = None,
    now: float | None = None,
    failures: Mapping[str, Failure] | None = None,
) -> list[JobState]:
    """The state of every (row, seed); `alive`: a campaign process is running now;
    `failures`: the campaign process's failed attempts (`envgen.campaign.failures`). A run
    directory that cannot be read is `DAMAGED`, saying why: one line of the status, not a
    traceback that hides every other run."""
    now = time.time() if now is None else now
    states = []
    for row, job in row_jobs(plan):
        total = job.config.trained_steps if isinstance(job, Job) else 0
        base = JobState(row, job, job_dir(job, runs_root), MISSING, 0, total, None)
        try:
            version = version_of(job, versions)
            states.append(_state(base, version, alive, committed, now, failures or {}))
        except EnvGenError as exc:
            states.append(dataclasses.replace(base, state=DAMAGED, problem=str(exc)))
    return states


def _state(
    base: JobState,
    version: int,
    alive: bool,
    committed: Callable[[Path], bool] | None,
    now: float,
    failures: Mapping[str, Failure],
) -> JobState:
    """The state of `base`'s run (`base`: as if missing)."""
    run_dir = base.run_dir
    if not run_dir.is_dir():
        return base
    line, start = _provenance(run_dir)
    base = dataclasses.replace(base, provenance=line)
    if is_sealed(run_dir):
        if recorded_version(run_dir) != version:
            return dataclasses.replace(base, state=STALE)
        verify_run(run_dir)  # its files, logs decompressed, as sealed: else DAMAGED, named
        steps, wall, score = finished_numbers(RunDir(run_dir).final_metrics)
        return dataclasses.replace(
            base,
            state=FINISHED,
            steps=steps,
            speed=(steps - start) / wall if wall and start is not None and start < steps else None,
            score=score,
            committed=committed(run_dir) if committed else None,
        )
    path = RunDir(run_dir).metrics
    tail = last_records(path, SPEED_WINDOW)
    steps = _field(tail[-1] if tail else {}, "step", 0, int, path, "a whole number")
    speeds = [_field(r, "time/sps", None, float, path, "a number") for r in tail]
    speeds = [s for s in speeds if s]
    speed = len(speeds) / sum(1 / s for s in speeds) if speeds else None
    failure = failures.get(run_key(run_dir))
    if failure is not None and failure.at >= _last_write_anywhere(run_dir):
        return dataclasses.replace(base, state=FAILED_RUN, steps=steps, problem=failure.reason)
    if alive and now - _last_write(run_dir) < RUNNING_WINDOW_S:
        state = RUNNING
    elif (run_dir / LATEST_CHECKPOINT).is_file():
        state, steps = PARTIAL, checkpoint_step(run_dir)
    else:
        state, steps = MISSING, 0  # no checkpoint: it starts over
    return dataclasses.replace(base, state=state, steps=steps, speed=speed)


def checkpoint_step(run_dir: Path) -> int:
    """The env step the run's checkpoint resumes from; an `EnvGenError` naming the file
    when it cannot be read (the run would not resume either)."""
    # lazy: torch (0.86 s), which a status of runs without a checkpoint never loads
    import torch

    from envgen.agents.checkpoint import load_checkpoint  # lazy: with torch, above

    state = load_checkpoint(run_dir / LATEST_CHECKPOINT.parent, torch.device("cpu"))
    if state is None:
        return 0
    path, counters = run_dir / LATEST_CHECKPOINT, state["counters"]
    if not isinstance(counters, dict):
        raise EnvGenError(f"{path}: counters is {type(counters).__name__}, not a mapping")
    return _field(counters, "global_step", 0, int, path, "a whole number")


def finished_numbers(path: Path) -> tuple[int, float | None, float]:
    """(global_steps, wall_s or None, score) of a finished run's final metrics; an
    `EnvGenError` naming the file and field when one has the wrong type."""
    final = read_json(path)
    if not isinstance(final, dict):
        raise EnvGenError(f"{path}: holds a {type(final).__name__}, not a mapping of metrics")
    steps = _field(final, "global_steps", 0, int, path, "a whole number")
    wall = _field(final, "wall_s", None, float, path, "a number of seconds")
    score = _field(final, "score", None, float, path, "a number (%)")
    if score is None:
        raise EnvGenError(f"{path}: score is missing; a finished run records its score")
    return steps, (wall if wall and wall > 0 else None), score


def _field(
    record: dict[str, Any], key: str, default: Any, kind: type, path: Path, what: str
) -> Any:
    """`record[key]` (`default` when absent or null) if it is a finite `kind` (a float
    field takes a whole number too), else an `EnvGenError` naming `path` and `key`."""
    value = record.get(key)
    if value is None:
        return default
    kinds = (int, float) if kind is float else (kind,)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        raise EnvGenError(f"{path}: {key} is {value!r}, not {what}")
    return value


def last_records(path: Path, count: int) -> list[dict[str, Any]]:
    """The last `count` whole JSON lines of a JSONL log, oldest first (a line being
    written, which may also be cut inside a UTF-8 character, is skipped); an
    `EnvGenError` when one of them is JSON but not a record."""
    if not path.is_file():
        return []
    records: list[dict[str, Any]] = []
    lines = path.read_bytes().splitlines()
    for number in range(len(lines), 0, -1):
        if len(records) == count:
            break
        try:
            record = json.loads(lines[number - 1].decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included
            continue
        if not isinstance(record, dict):
            raise EnvGenError(f"{path}: line {number} is {record!r}, not a record of metrics")
        records.append(record)
    return records[::-1]


def _last_write_anywhere(run_dir: Path) -> float:
    """The newest change in the run directory or its checkpoints (a removed checkpoint
    changes its folder's time)."""
    times = []
    for folder in (run_dir, run_dir / LATEST_CHECKPOINT.parent):
        with contextlib.suppress(OSError):  # a file removed while we look: not a write
            for path in (folder, *folder.iterdir()):
                times.append(path.stat().st_mtime)
    return max(times, default=0.0)


def _last_write(run_dir: Path) -> float:
    files = [p for p in run_dir.iterdir() if p.is_file()]
    return max((p.stat().st_mtime for p in files), default=run_dir.stat().st_mtime)


def eta_s(states: Sequence[JobState], workers: int) -> tuple[float | None, float | None]:
    """(seconds left, env steps/s per run used), from the measured speed and `workers`.

    Speed: the mean over running runs (this machine, now), else over finished runs,
    which may have trained on a machine several times faster or slower (docs/
    measurements.md, "Reruns"). The work left is spread over `workers` runs at once, and
    ends no sooner than the longest remaining run alone.
    """
    distinct = {s.job.key: s for s in states}.values()
    left = [s.total_steps - s.steps for s in distinct if s.state != FINISHED]
    if not left:
        return 0.0, None
    measured = [s.speed for s in distinct if s.state == RUNNING and s.speed]
    measured = measured or [s.speed for s in distinct if s.state == FINISHED and s.speed]
    if not measured:
        return None, None
    speed = sum(measured) / len(measured)
    return max(sum(left) / (max(1, workers) * speed), max(left) / speed), speed


# --- runs.json from the store -------------------------------------------------------------
def collect_table(
    plan: TablePlan,
    profile: Profile,
    runs_root: Path,
    versions: Mapping[str, int],
    continue_command: str,
) -> dict[str, Any]:
    """The campaign's runs.json: finished runs only, each row saying k of n seeds."""
    results = {}
    for _, job in row_jobs(plan):
        run_dir = job_dir(job, runs_root)
        done = is_finished(run_dir, version_of(job, versions))
        results[job.key] = JobResult(job.key, DONE if done else MISSING, str(run_dir))
    table = table_results(plan, profile, results, runs_root, versions)
    planned = {row.name: len(row.jobs) for row in plan.rows}
    for row in table["rows"]:
        if row["row"] not in planned or row["status"] != DONE:
            continue
        k, n = len(row["runs"]), planned[row["row"]]
        row["planned_runs"] = n
        if k == 0:
            row["status"] = NOT_STARTED
            row["reason"] = f"0 of {n} seeds finished; start it: {continue_command}"
        elif k < n:
            row["reason"] = (
                f"{k} of {n} seeds finished (campaign in progress; {continue_command} "
                "trains the rest)"
            )
    return table


def write_collected(table: dict[str, Any], outs: Sequence[Path], withheld: bool = False) -> None:
    """runs.json, metrics.json and scores.json of a collected table, at `outs`. `withheld`
    (a registered campaign before every planned run is in): metrics.json holds run counts
    only and scores.json no point, so `dvc metrics show` and `dvc plots` show no interim
    score; the report withholds the rest (`envgen.report.campaign_section.withheld_runs`)."""
    metrics, scores = metrics_and_scores(table, withheld)
    for path, data in zip(outs, (table, metrics, scores), strict=True):
        write_json_atomic(path, data)
        print(f"[campaign] wrote {path}")
