"""What became of a job, and where its run lives: all the results tables and `envgen
campaign status` read of finished runs, apart from `envgen.pipeline.jobs`, which runs a
job (torch and the training loop) and builds its LLM client.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from envgen.pipeline.plan import Job, RandomJob
from envgen.results_version import RESULTS_VERSION, version_key
from envgen.store.run_dir import RunDir

DONE, FAILED, NOT_RECORDED = "done", "failed", "not_recorded"
LLM_UNUSABLE = "llm_unusable"  # the recorded reply is unusable even after re-asks: a result
CONFIG_ERROR = "config_error"  # a setting no attempt can follow (`RunSettingError`): not retried
PROBLEMS = (FAILED, CONFIG_ERROR, NOT_RECORDED, LLM_UNUSABLE)  # the order a row names them in


@dataclasses.dataclass(frozen=True)
class JobResult:
    """What became of one job."""

    key: tuple[str, int]
    """(config hash, seed)."""
    status: str
    """done | failed | not_recorded | llm_unusable | config_error."""
    run_dir: str
    """The run directory, relative to the working directory as given."""
    reason: str = ""
    """Why a job did not finish, with the command that fixes it where there is one."""
    attempts: int = 1
    """Times the executor ran it."""


def job_dir(job: Job | RandomJob, runs_root: Path | str) -> Path:
    """`<runs_root>/<config hash>/seed-<K>`: the run directory of `job`."""
    return RunDir.of(runs_root, job.key[0], job.seed).root


def job_game(job: Job | RandomJob) -> str:
    """The game whose results version governs `job` (random-policy runs play Crafter)."""
    return job.config.game if isinstance(job, Job) else "crafter"


def job_version_key(job: Job | RandomJob) -> str:
    """The `RESULTS_VERSION` key of `job`: its game, "-llm" when an LLM adapts its worlds."""
    return version_key(job_game(job), isinstance(job, Job) and job.config.llm_adapts)


def results_versions() -> dict[str, int]:
    """{kind of run: results version} of the current code (`envgen.results_version`)."""
    return dict(RESULTS_VERSION)
