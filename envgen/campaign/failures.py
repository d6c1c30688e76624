"""The runs a campaign process gave up on, kept for `envgen campaign status`.

A run that fails at once (a refused resume, say) while the campaign lives on has files
written within the last minutes, so `status` would show it running. The process records
each failed attempt in `STATE_DIR/<name>.failed.json` (run -> time, reason) and drops the
record when the run finishes; `status` shows a failure while nothing in the run was
written after it (a retry that trains writes its logs).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from envgen import json_input
from envgen.campaign.registry import STATE_DIR
from envgen.errors import EnvGenError
from envgen.files import write_json_atomic
from envgen.pipeline.job_status import CONFIG_ERROR, DONE, FAILED, JobResult
from envgen.store.run_dir import RunDir

RESUME_REFUSED = "ResumeRefusedError"  # the class name in a job's failure reason


@dataclasses.dataclass(frozen=True)
class Failure:
    """One run's last failed attempt."""

    at: float
    """When it was recorded (seconds since the epoch)."""
    reason: str
    """The job's failure reason (`JobResult.reason`: the exception's class and message)."""


def resume_refused(reason: str) -> bool:
    """Whether a failure reason is a refused checkpoint (`ResumeRefusedError`)."""
    return RESUME_REFUSED in reason.split(":", 1)[0]


def message_of(reason: str) -> str:
    """A failure reason without the exception's (dotted) class name."""
    head, _, rest = reason.partition(": ")
    return rest if rest and " " not in head else reason


def failures_file(campaign: str) -> Path:
    return STATE_DIR / f"{campaign}.failed.json"


def run_key(run_dir: Path | str) -> str:
    """`<hash>/seed-<K>`: the run, whatever runs root it was reached by."""
    return RunDir(Path(run_dir)).run_id


def read_failures(path: Path) -> dict[str, Failure]:
    """The recorded failures; an unreadable file records none (status must still show
    every other run)."""
    try:
        data = json_input.read(path) if path.is_file() else {}
    except EnvGenError:
        data = {}
    entries = data.items() if isinstance(data, dict) else ()
    return {
        key: Failure(float(entry["at"]), entry["reason"])
        for key, entry in entries
        if isinstance(entry, dict)
        and isinstance(entry.get("at"), (int, float))
        and isinstance(entry.get("reason"), str)
    }


def record(path: Path, result: JobResult, now: float | None = None) -> None:
    """Keep `result`'s failure, or drop the run's record once it finished."""
    if result.status not in (FAILED, CONFIG_ERROR, DONE):
        return
    failures = read_failures(path)
    key = run_key(result.run_dir)
    if result.status != DONE:
        failures[key] = Failure(time.time() if now is None else now, result.reason)
    elif failures.pop(key, None) is None:
        return
    write_json_atomic(path, {k: dataclasses.asdict(f) for k, f in sorted(failures.items())})
