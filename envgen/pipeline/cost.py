"""What a profile's plans cost, as `python -m envgen.pipeline.train --plan` prints it.

Training runs and env steps per table and in all (a run shared by tables counted once);
for a GPU profile, runs per GPU by memory and GPU-hours per network, from the estimates
of `envgen.pipeline.gpu_plan`, each figure labelled measured or assumed. Nothing is trained.
"""

from __future__ import annotations

from collections.abc import Sequence

from envgen.pipeline import gpu_plan
from envgen.pipeline.executor import ExecutorConfig
from envgen.pipeline.plan import Job, RandomJob, TablePlan, distinct_jobs
from envgen.pipeline.profile import Profile


def plan_summary(
    plans: Sequence[TablePlan],
    profile: Profile,
    executor: ExecutorConfig | None = None,
    gpu_sps: float | None = None,
) -> str:
    """Runs and env steps per table and in all (a run shared by tables counted once);
    for a GPU profile, runs per GPU and GPU-hours (estimates, `envgen.pipeline.gpu_plan`)."""
    lines = [f"profile {profile.name!r} (device {profile.device}):"]
    lines += [f"  {plan.table:12s} {_budget(plan.jobs)}" for plan in plans]
    lines.append(f"  {'distinct':12s} {_budget(distinct_jobs(plans))}")
    if profile.device.startswith("cuda"):
        lines += gpu_summary(distinct_jobs(plans), executor or ExecutorConfig(), gpu_sps)
    return "\n".join(lines)


def gpu_summary(
    jobs: Sequence[Job | RandomJob], executor: ExecutorConfig, gpu_sps: float | None
) -> list[str]:
    """Runs per GPU by memory and GPU-hours per network, from the estimates of gpu_plan."""
    configs = [job.config for job in jobs if isinstance(job, Job)]
    largest = gpu_plan.largest_run(configs)
    if largest is None:
        return []
    card, source = gpu_plan.card_memory(executor.gpu_memory_gib)
    fit = gpu_plan.runs_per_gpu(largest.total, card, int(executor.gpu_reserve_gib * gpu_plan.GIB))
    if executor.gpus_per_run > 0:
        fit = min(fit, max(1, int(1 / executor.gpus_per_run)))
    reserve = int(executor.gpu_reserve_gib * gpu_plan.GIB)
    lines = [f"  GPU card: {source}, {executor.gpu_reserve_gib:g} GiB kept free"]
    for kind in sorted({(c.game, c.model, c.agent) for c in configs}):
        memory = gpu_plan.largest_run([c for c in configs if (c.game, c.model, c.agent) == kind])
        assert memory is not None
        alone = gpu_plan.runs_per_gpu(memory.total, card, reserve)
        lines.append(f"  {'/'.join(kind)}: {alone} runs per GPU; {memory.describe()}")
    lines.append(f"  runs per GPU when these rows run together: {fit} (the largest run's)")
    total, sources = 0.0, set()
    for kind in sorted({gpu_plan.cohort_kind(c) for c in configs if c.cohort > 1}):
        measured = gpu_plan.cohort_rate(*kind)
        if measured is None:
            continue  # no cohort of this kind measured: planned with the runs' rate below
        steps = sum(c.total_steps for c in configs if gpu_plan.cohort_kind(c) == kind)
        configs = [c for c in configs if gpu_plan.cohort_kind(c) != kind]
        hours = gpu_plan.gpu_hours(steps, 0, measured[0])
        sources.add(f"{kind[0]} cohorts: {measured[1]}")
        total += hours
        lines.append(
            f"  GPU-hours, {kind[0]} network in cohorts of {kind[2]}"
            + (f" in {kind[3]} groups" if kind[3] > 1 else "")
            + f": {hours:,.0f} "
            f"({steps / 1e6:,.1f}M env steps at {measured[0]:,.0f} per GPU-second: {measured[1]})"
        )
    for model in sorted({c.model for c in configs}):
        steps = sum(c.total_steps for c in configs if c.model == model)
        ad_steps = sum(c.total_steps for c in configs if c.model == model and c.agent == "ad")
        rate, source = gpu_plan.gpu_rate(model, gpu_sps, fit)
        hours = gpu_plan.gpu_hours(steps, ad_steps, rate)
        sources.add(f"{model}: {source}")
        if ad_steps:
            sources.add(f"AD's step {gpu_plan.AD_COST:g} x PPO's: ASSUMED, not measured")
        total += hours
        lines.append(
            f"  GPU-hours, {model} network: {hours:,.0f} ({steps / 1e6:,.1f}M env steps at "
            f"{rate:,.0f} per GPU-second: {source})"
        )
    lines.append(
        f"  GPU-hours in all: {total:,.0f} ({'; '.join(sorted(sources))}; "
        "docs/pipeline.md, 'GPU plan')"
    )
    return lines


def _budget(jobs: Sequence[Job | RandomJob]) -> str:
    trained = [job for job in jobs if isinstance(job, Job)]
    steps = sum(job.config.total_steps for job in trained)
    episodes = sum(job.episodes for job in jobs if isinstance(job, RandomJob))
    return (
        f"{len(trained):4d} training runs, {steps / 1e6:9.2f}M env steps"
        f" (+{episodes} random-policy episodes)"
    )
