"""Run many jobs in parallel: local worker processes, or Ray tasks on a cluster.

Both call `run_job` once per attempt of each job. A failed job is retried up to
`ExecutorConfig.retries` more times; not_recorded and config_error jobs are not (only
recording the reply, or another setting, fixes them). `run_job` skips finished runs, so
a killed executor, started again, does only the jobs that had not finished. On a GPU,
runs share a card by memory (`envgen.pipeline.gpu_plan`): the local executor starts no
more runs than the card holds (every run trains on the profile's one device); Ray tasks
declare the share of a GPU their memory takes. `gpus_per_run` > 0 only lowers the
number of runs per GPU.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

from envgen import numerics
from envgen.envs.vector import usable_cores
from envgen.errors import ConfigError
from envgen.lifetime import die_with_parent
from envgen.pipeline.gpu_plan import (
    DEFAULT_RESERVE_GIB,
    GIB,
    card_memory,
    largest_run,
    runs_per_gpu,
)
from envgen.pipeline.job_status import FAILED, JobResult, job_dir
from envgen.pipeline.jobs import Settings, run_cohort, run_job, split_cohorts
from envgen.pipeline.plan import Job, RandomJob

EXECUTORS = ("local", "ray")
AnyJob = Job | RandomJob


@dataclasses.dataclass(frozen=True)
class ExecutorConfig:
    """How many runs at once, and where."""

    kind: str = "local"
    """local (worker processes on this machine) | ray (tasks on a Ray cluster)."""
    workers: int = 0
    """Runs at once (local); 0 = sized to the machine's cores and GPUs."""
    env_workers: int = 1
    """Vec-env worker processes per run; also the CPUs each run declares to Ray."""
    gpus_per_run: float = 0.0
    """GPUs each run declares at least (fractions share a GPU); 0 = the share its memory
    estimate takes of a card (`envgen.pipeline.gpu_plan`), and nothing on CPU."""
    gpu_memory_gib: float = 0.0
    """Memory of each GPU to plan with; 0 = the free memory torch reports on this
    machine's GPU, or 80 GiB (an H100/A100 80 GB) where none is visible (a Ray head)."""
    gpu_reserve_gib: float = DEFAULT_RESERVE_GIB
    """GPU memory left free on each card (other processes, fragmentation)."""
    retries: int = 1
    """Further attempts of a failed job."""
    ray_address: str | None = None
    """None starts a local Ray instance; "auto" or host:port joins a running cluster."""

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ConfigError("executor", f"{self.kind!r}; use one of {', '.join(EXECUTORS)}")
        if self.env_workers < 1:
            raise ConfigError("execution.env_workers", "must be >= 1")
        for name in ("workers", "retries", "gpus_per_run", "gpu_memory_gib", "gpu_reserve_gib"):
            if getattr(self, name) < 0:
                raise ConfigError(f"execution.{name}", "must be >= 0")

    def local_workers(self, cores: int, gpus: int, runs_per_gpu: int | None = None) -> int:
        """Parallel runs on one machine: `workers`, else a run per `env_workers` cores (its
        learner alternates with its env workers); on a GPU, no more than its one card holds
        (`runs_per_gpu` by memory, 1 / `gpus_per_run` if set)."""
        runs = self.workers or max(1, cores // self.env_workers)
        if gpus and self.gpus_per_run > 0:
            runs = min(runs, max(1, int(1 / self.gpus_per_run)))
        if gpus and runs_per_gpu is not None:
            runs = min(runs, runs_per_gpu)
        return runs

    def gpu_share(self, runs_per_gpu: int) -> float:
        """The GPUs one Ray task declares: its memory's share, or `gpus_per_run` if more."""
        return max(self.gpus_per_run, math.ceil(1000 / runs_per_gpu) / 1000)


def execute(
    jobs: Sequence[AnyJob],
    settings: Settings,
    config: ExecutorConfig,
    log: Callable[[str], Any] = print,
    on_result: Callable[[JobResult], Any] | None = None,
) -> dict[tuple[str, int], JobResult]:
    """Run every job (retrying failures); returns the final result per job key. Each
    attempt's result goes to `on_result` in this process as it arrives (a campaign
    commits a finished run at once)."""
    run = _ray_runner(config) if config.kind == "ray" else _local_runner(config)
    results: dict[tuple[str, int], JobResult] = {}
    pending = list(jobs)
    for attempt in range(1, config.retries + 2):
        if not pending:
            break
        log(f"[pipeline] attempt {attempt}: {len(pending)} job(s) on {config.kind}")

        def report(result: JobResult) -> None:
            log(f"[pipeline] {result.status:12s} {result.run_dir} {result.reason[:200]}")
            if on_result is not None:
                on_result(result)

        cohorts, rest = split_cohorts(pending)
        outcomes: dict[tuple[str, int], JobResult] = {}
        for cohort in cohorts:  # one at a time: a cohort fills its GPU (envgen.agents.cohort)
            for result in run_cohort(cohort, settings):
                outcomes[result.key] = result
                report(result)
        if rest:
            for job, result in zip(rest, run(rest, settings, report), strict=True):
                outcomes[job.key] = result
        for job in pending:
            results[job.key] = dataclasses.replace(outcomes[job.key], attempts=attempt)
        pending = [job for job in pending if results[job.key].status == FAILED]
    return results


Report = Callable[[JobResult], None]  # called with each result as it arrives
Runner = Callable[[Sequence[AnyJob], Settings, Report], list[JobResult]]  # results in job order


def gpu_fit(
    jobs: Sequence[AnyJob], settings: Settings, config: ExecutorConfig, log: Callable = print
) -> int | None:
    """Runs of `jobs` one GPU holds by memory (None when they train on the CPU)."""
    if not settings.device.startswith("cuda"):
        return None
    largest = largest_run([job.config for job in jobs if isinstance(job, Job)])
    if largest is None:
        return None
    card, source = card_memory(config.gpu_memory_gib, settings.device)
    fit = runs_per_gpu(largest.total, card, int(config.gpu_reserve_gib * GIB))
    log(f"[pipeline] GPU: {largest.describe()}; {fit} per GPU of {source}")
    return fit


def numerics_of(job: AnyJob) -> str:
    """The CPU numerics mode a job's process must start in (`envgen.numerics`)."""
    return job.config.cpu_numerics if isinstance(job, Job) else numerics.NATIVE


def _local_runner(config: ExecutorConfig) -> Runner:
    def run(jobs: Sequence[AnyJob], settings: Settings, report: Report) -> list[JobResult]:
        fit = gpu_fit(jobs, settings, config)
        done: dict[tuple[str, int], JobResult] = {}
        by_mode: dict[str, list[AnyJob]] = {}  # workers start in their jobs' numerics mode
        for job in jobs:
            by_mode.setdefault(numerics_of(job), []).append(job)
        for mode, group in by_mode.items():
            workers = min(len(group), config.local_workers(usable_cores(), _gpus(), fit))
            # workers read the mode's variables as they load numpy and torch
            with numerics.spawning(mode), worker_pool(workers) as pool:
                futures = {pool.submit(run_job, job, settings): job for job in group}
                for future in concurrent.futures.as_completed(futures):
                    job = futures[future]
                    done[job.key] = _outcome(job, settings, future.result)
                    report(done[job.key])
        return [done[job.key] for job in jobs]

    return run


def worker_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """`workers` spawned processes that end when this one does (`envgen.lifetime`): a
    killed stage or campaign leaves no worker training on. A worker trains its jobs with
    the code it imported first, while each run records the checkout's commit at its own
    start: edit the checkout under a running stage and a later run's provenance may name
    newer code than trained it (docs/campaign_llm15.md, "Deviations")."""
    context = multiprocessing.get_context("spawn")  # torch and forked workers do not mix
    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),)
    )


def _outcome(job: AnyJob, settings: Settings, result: Callable[[], JobResult]) -> JobResult:
    """A worker that died (killed, out of memory, a lost Ray node) fails its job instead
    of the executor."""
    try:
        return result()
    except Exception as exc:  # noqa: BLE001 - e.g. BrokenProcessPool, a lost node
        return JobResult(job.key, FAILED, str(job_dir(job, settings.runs_root)), repr(exc)[:500])


def _ray_runner(config: ExecutorConfig) -> Runner:
    import ray  # lazy: optional dependency (ray)

    def run(jobs: Sequence[AnyJob], settings: Settings, report: Report) -> list[JobResult]:
        if not ray.is_initialized():
            if config.ray_address:
                ray.init(address=config.ray_address, runtime_env=_ray_runtime_env())
            else:
                ray.init(num_cpus=usable_cores(), num_gpus=_gpus(), runtime_env=_ray_runtime_env())
        fit = gpu_fit(jobs, settings, config)
        gpus = config.gpu_share(fit) if fit is not None else config.gpus_per_run
        task = ray.remote(num_cpus=config.env_workers, num_gpus=gpus)(run_job)
        # paths a Ray worker resolves from any directory (the store must be shared)
        llm = dataclasses.replace(settings.llm, cache_dir=os.path.abspath(settings.llm.cache_dir))
        remote_settings = dataclasses.replace(
            settings, runs_root=os.path.abspath(settings.runs_root), llm=llm
        )
        refs = {
            task.options(max_retries=0, runtime_env=_ray_runtime_env(numerics_of(job))).remote(
                job, remote_settings
            ): job
            for job in jobs
        }
        done: dict[tuple[str, int], JobResult] = {}
        waiting = list(refs)
        while waiting:
            (ref,), waiting = ray.wait(waiting, num_returns=1)
            job = refs[ref]
            done[job.key] = _outcome(job, settings, lambda ref=ref: ray.get(ref))
            report(done[job.key])
        return [done[job.key] for job in jobs]

    return run


def _ray_runtime_env(mode: str = numerics.NATIVE) -> dict[str, Any]:
    """Ray workers start elsewhere: make them import this checkout's `envgen`, and start
    a portable job's worker with that mode's variables (`envgen.numerics`)."""
    extra = numerics.PORTABLE_ENVIRONMENT if mode == numerics.PORTABLE else {}
    return {"env_vars": {"PYTHONPATH": os.getcwd(), **extra}}


def _gpus() -> int:
    # lazy: torch; planning and `envgen campaign status` load this module and no torch
    # (tests/test_lazy_imports.py)
    import torch

    return torch.cuda.device_count()
