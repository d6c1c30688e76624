"""One job, start to finish, inside whichever worker process or Ray task runs it.

`run_job` never raises for a run that cannot complete: its `JobResult` says why.
not_recorded: an LLM reply is missing from the cache. llm_unusable: the recorded reply
stays unusable after the designer's re-asks; it replays so every time, so it is the
row's result, not retried. config_error: a setting no attempt can follow
(`RunSettingError`, e.g. `llm_history_cycles: auto` for a model of unknown context), not
retried either. failed: any other error, a server unreachable or without a reply
included (`LLMTransportError`, which the LLM client raises for openai's connection and
status errors; a client that raises `LLMResponseError` for them has its runs labelled
llm_unusable), retried by the executor. Reasons are scrubbed of every configured LLM key
before they reach runs.json. A sealed run of the code's results version is returned as
is; one of another version is removed and run again (`envgen.results_version`).
"""

from __future__ import annotations

import dataclasses
import shutil
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.agents.device import set_deterministic
from envgen.errors import (
    CacheMissError,
    ConfigError,
    EnvGenError,
    LLMResponseError,
    LLMTransportError,
    RunSettingError,
)
from envgen.llm.budget import Budget
from envgen.llm.cache import CachedLLM
from envgen.llm.client import LOCAL_MODEL, LOCAL_MODELS, backend_config, configured_keys, scrub
from envgen.loop.identity import check_identity
from envgen.pipeline.job_status import (
    CONFIG_ERROR,
    DONE,
    FAILED,
    LLM_UNUSABLE,
    NOT_RECORDED,
    JobResult,
    job_dir,
    job_version_key,
    results_versions,
)
from envgen.pipeline.plan import Job, RandomJob
from envgen.pipeline.profile import Profile
from envgen.pipeline.random_policy import play_random
from envgen.store.lifecycle import finish_run
from envgen.store.manifest import LATEST_CHECKPOINT, is_sealed
from envgen.store.provenance import recorded_version
from envgen.store.run_dir import RunDir, read_json


@dataclasses.dataclass(frozen=True)
class LLMSpec:
    """Where a job's LLM replies come from; built into a `CachedLLM` inside the worker."""

    mode: str = "replay"
    """Cache mode: replay (the pipeline) or fill (recording the local model's calls)."""
    cache_dir: str = "data/llm_cache"
    """The response cache directory."""
    local_base_url: str | None = None
    """A running local server's /v1 URL (fill mode only)."""
    local_model: str = LOCAL_MODEL
    """The local model that server serves; other local models' rows replay."""
    local_server: str | None = None
    """Which local server that is (`envgen.llm.server.SERVERS`), recorded with its replies."""
    match: str = "slot"
    """How replay matches requests: slot (across machines) or strict (`envgen.llm.cache`)."""
    record_backend: str | None = None
    """Fill mode for another model than the local one: its backend (openai | compatible)."""
    record_model: str | None = None
    """The model whose missing replies fill mode records through `record_backend`."""
    record_base_url: str | None = None
    """`compatible` backend's /v1 URL."""
    max_usd: float | None = None
    """Spending cap of the recording session (envgen.llm.budget); None = no cap."""
    since: str = ""
    """When the recording session started (UTC ISO 8601): the cap counts from here."""

    def build(self, model: str) -> CachedLLM:
        """Replay for every model but the one being recorded (local: through its server)."""
        budget = None
        if model in LOCAL_MODELS:
            serving = model == self.local_model and self.local_base_url is not None
            backend = backend_config(
                "local", model=model, base_url=self.local_base_url if serving else None
            )
            if serving:
                backend = dataclasses.replace(backend, server=self.local_server)
            mode = self.mode if serving else "replay"
        elif self.mode == "fill" and model == self.record_model and self.record_backend:
            backend = backend_config(
                self.record_backend, model=model, base_url=self.record_base_url
            )
            mode = "fill"
            if self.max_usd is not None:
                budget = Budget(self.max_usd, self.since, model)
        else:
            backend, mode = backend_config("openai", model=model), "replay"
        return CachedLLM(mode, Path(self.cache_dir), backend, match=self.match, budget=budget)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How every job runs; none of it changes a run's numbers except `torch_threads`."""

    runs_root: str
    """Run store root (``results/runs``)."""
    versions: Mapping[str, int]
    """{game: results version of the current code} (`envgen.results_version`)."""
    device: str = "cpu"
    """Torch device."""
    env_workers: int = 1
    """Vec-env worker processes per run."""
    torch_threads: int = 1
    """Torch intra-op threads per run (part of the profile: float sums depend on it)."""
    deterministic: bool = False
    """Deterministic GPU kernels (`envgen.agents.device.set_deterministic`); no CPU effect."""
    checkpoint_minutes: float = 0.0
    """`RunOptions.checkpoint_minutes`: `envgen gpu run` sets it; no effect on numbers."""
    llm: LLMSpec = LLMSpec()
    """LLM cache access."""

    @classmethod
    def for_profile(
        cls, profile: Profile, runs_root: Path | str, llm: LLMSpec, env_workers: int = 1
    ) -> Settings:
        """How every job of `profile` runs, under the code's results versions (the train
        stage, campaigns and `envgen gpu run` alike)."""
        return cls(
            runs_root=str(runs_root),
            versions=results_versions(),
            device=profile.device,
            env_workers=env_workers,
            torch_threads=profile.torch_threads,
            deterministic=profile.deterministic,
            llm=llm,
        )


# Short, so that torch's own figures (tried to allocate, free) survive the log's cut at
# 200 characters; docs/pipeline.md, "GPU plan", says the rest.
OUT_OF_MEMORY = "out of GPU memory: lower execution.gpus_per_run (0.25 = 4 runs a GPU); "
# Allocation failures torch raises as a plain RuntimeError: cuBLAS, cuDNN 8 and 9
# (CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED), and the CUDA runtime's own.
GPU_ALLOC_FAILURES = (
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "ALLOCATION_FAILED",
    "CUDA error: out of memory",
)


def run_job(job: Job | RandomJob, settings: Settings) -> JobResult:
    """Run one job (see the module docstring); safe to call again after a kill."""
    torch, options = _start(settings)
    from envgen.loop.runner import execute_run  # lazy: torch, as in _start

    run_dir = job_dir(job, settings.runs_root)
    version = settings.versions[job_version_key(job)]
    try:
        _drop_if_stale(run_dir, version)
        if is_sealed(run_dir):
            _check_identity(run_dir)
            return JobResult(job.key, DONE, str(run_dir))
        if isinstance(job, RandomJob):
            play_random(job.episodes, job.seed, run_dir)
            return JobResult(job.key, DONE, str(run_dir))
        llm = settings.llm.build(job.config.llm_model) if job.config.uses_llm else None
        try:
            execute_run(job.config, job.seed, settings.runs_root, llm, options)
        except CacheMissError:  # refused at its first LLM call, the run leaves nothing
            if run_dir.is_dir() and not any(run_dir.iterdir()):
                shutil.rmtree(run_dir)
            raise
        return JobResult(job.key, DONE, str(run_dir))
    except CacheMissError as exc:
        return JobResult(job.key, NOT_RECORDED, str(run_dir), _scrubbed(str(exc)))
    except (LLMResponseError, LLMTransportError) as exc:
        reason = _scrubbed(str(exc).splitlines()[0])
        if isinstance(exc, LLMTransportError):  # no reply came: the server's, retried
            return JobResult(job.key, FAILED, str(run_dir), reason)
        return JobResult(job.key, LLM_UNUSABLE, str(run_dir), reason)  # replays the same way
    except RunSettingError as exc:  # the same on every attempt: not retried
        return JobResult(job.key, CONFIG_ERROR, str(run_dir), _scrubbed(str(exc)))
    except Exception as exc:  # noqa: BLE001 - reported per job, retried by the executor
        return JobResult(job.key, FAILED, str(run_dir), _failure(exc, torch))


def run_cohort(jobs: Sequence[Job], settings: Settings) -> list[JobResult]:
    """Run the jobs of one cohort (one config, `config.cohort` seeds) together
    (`envgen.loop.cohort_run`); one result per job, in order. A failure fails them all:
    their seeds train as one."""
    torch, options = _start(settings)
    from envgen.loop.cohort_run import execute_cohort  # lazy: torch, as in _start

    config, seeds = jobs[0].config, [job.seed for job in jobs]
    dirs = [job_dir(job, settings.runs_root) for job in jobs]
    try:
        if len(jobs) != config.cohort:
            raise ConfigError(
                "seeds",
                f"a cohort of {config.cohort} got {len(jobs)} seed(s) ({seeds}); give each "
                f"row's seeds in multiples of {config.cohort}",
            )
        for run_dir in dirs:
            _drop_if_stale(run_dir, settings.versions[config.game])
        if not all(is_sealed(d) for d in dirs):
            execute_cohort(config, seeds, settings.runs_root, options)
        for run_dir in dirs:
            _check_identity(run_dir)
        return [JobResult(job.key, DONE, str(d)) for job, d in zip(jobs, dirs, strict=True)]
    except Exception as exc:  # noqa: BLE001 - reported per job, retried by the executor
        reason = _failure(exc, torch)
        return [
            JobResult(job.key, FAILED, str(d), reason) for job, d in zip(jobs, dirs, strict=True)
        ]


def _start(settings: Settings) -> tuple[Any, Any]:
    """(torch, the `RunOptions` of `settings`), this process's torch set as they say."""
    # lazy: torch and the training loop, imported where a job runs: the pipeline's planning,
    # its results tables and `envgen campaign status` load this module and no torch
    # (tests/test_lazy_imports.py)
    import torch

    from envgen.loop.runner import RunOptions  # lazy: torch, as above

    torch.set_num_threads(settings.torch_threads)
    set_deterministic(settings.deterministic)
    options = RunOptions(
        device=settings.device,
        num_workers=settings.env_workers,
        checkpoint_minutes=settings.checkpoint_minutes,
    )
    return torch, options


def split_cohorts(jobs: Sequence[Job | RandomJob]) -> tuple[list[list[Job]], list]:
    """(cohorts, the other jobs): jobs whose config trains in cohorts, grouped by config
    and, in seed order, `config.cohort` seeds a group (the last may be short: it fails
    with the fix)."""
    groups: dict[str, list[Job]] = {}
    rest: list[Job | RandomJob] = []
    for job in jobs:
        if isinstance(job, Job) and job.config.cohort > 1:
            groups.setdefault(job.config.config_hash(), []).append(job)
        else:
            rest.append(job)
    cohorts = []
    for group in groups.values():
        group.sort(key=lambda job: job.seed)
        size = group[0].config.cohort
        cohorts += [group[i : i + size] for i in range(0, len(group), size)]
    return cohorts, rest


def _failure(exc: Exception, torch: Any) -> str:
    """The reason of a failed job, scrubbed: out of GPU memory (torch's error, or a cuBLAS
    or cuDNN allocation failure it raises as a plain RuntimeError) says the fix first, as
    the log cuts its line at 200 characters; otherwise the exception's last line."""
    if isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and any(text in str(exc) for text in GPU_ALLOC_FAILURES)
    ):
        return _scrubbed(OUT_OF_MEMORY + " ".join(str(exc).split()))  # CUDA's text spans lines
    return _scrubbed(traceback.format_exception_only(exc)[-1].strip())


def _scrubbed(reason: str) -> str:
    """`reason` without any configured LLM key: it is written to runs.json."""
    return scrub(reason, configured_keys())


def _drop_if_stale(run_dir: Path, version: int) -> None:
    """Remove a run directory that cannot be reused or resumed as it is: of another results
    version (or without provenance), or unfinished without a checkpoint (its logs would be
    appended to twice). A run killed after training, before its seal, is sealed here. A
    damaged provenance or manifest (a sealed run without provenance, a version not a whole
    number) is kept and fails the job in one line (a committed run restores from git)."""
    if not run_dir.exists():
        return
    final = RunDir(run_dir).final_metrics
    try:
        stale = recorded_version(run_dir) != version
    except EnvGenError as exc:
        raise EnvGenError(
            f"{exc}; the run is kept: restore it (`git checkout -- {run_dir}`) or delete "
            "its directory to train it again"
        ) from None
    if not stale and final.is_file() and not is_sealed(run_dir):
        finish_run(run_dir, read_json(final)["global_steps"])
    resumable = (run_dir / LATEST_CHECKPOINT).is_file()
    if stale or not (is_sealed(run_dir) or resumable):
        shutil.rmtree(run_dir)


def _check_identity(run_dir: Path) -> None:
    """A finished run must be the run its folder names (`envgen.loop.identity`): one
    copied into another's folder is kept, and its job fails saying so."""
    try:
        check_identity(run_dir)
    except EnvGenError as exc:
        raise EnvGenError(
            f"{exc} (the run is kept: restore it, or delete {run_dir} to train it again)"
        ) from None
