"""Cohorts in the pipeline: identity, the profile's `cohort`, grouping, and real runs that
come out as ordinary sealed runs (tiny, on the CPU)."""

import dataclasses
import json

import pytest

from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from envgen.loop.identity import check_identity
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import DONE, FAILED, job_dir
from envgen.pipeline.jobs import split_cohorts
from envgen.pipeline.plan import Job, RandomJob
from envgen.pipeline.profile import load_profile
from envgen.store import read_provenance, verify_run
from tests.test_pipeline_executor import quiet, settings, tiny_job


def test_the_cohort_size_is_part_of_a_run_identity_only_when_above_one():
    alone = RunConfig(method="original_only")
    assert "cohort" not in alone.to_dict()  # every committed run keeps its hash
    assert alone.replace(cohort=1).config_hash() == alone.config_hash()
    assert alone.replace(cohort=4).config_hash() != alone.config_hash()
    with pytest.raises(ConfigError, match="original_only"):
        RunConfig(cohort=4)  # EnvGen switches mixtures: not a cohort's schedule
    with pytest.raises(ConfigError, match="cohort"):
        RunConfig(method="original_only", cohort=0)


def test_a_pipelined_cohort_s_grouping_is_part_of_a_run_identity_only_when_above_one():
    cohort = RunConfig(method="original_only", cohort=4)
    assert "cohort_groups" not in cohort.to_dict()  # every committed cohort keeps its hash
    assert cohort.replace(cohort_groups=1).config_hash() == cohort.config_hash()
    pipelined = cohort.replace(cohort_groups=2)
    assert pipelined.to_dict()["cohort_groups"] == 2
    assert pipelined.config_hash() != cohort.config_hash()
    assert RunConfig.from_dict(pipelined.to_dict()) == pipelined
    with pytest.raises(ConfigError, match="cohort above 1"):
        RunConfig(method="original_only", cohort_groups=2)
    with pytest.raises(ConfigError, match="groups of at least 2"):
        cohort.replace(cohort_groups=3)
    with pytest.raises(ConfigError, match="groups of at least 2"):
        cohort.replace(cohort_groups=4)  # groups of 1 seed: runs alone, not a cohort


def test_a_profile_puts_only_eligible_rows_in_cohorts():
    import yaml

    params = yaml.safe_load(open("params.yaml"))
    profile = dataclasses.replace(load_profile(params, "smoke"), cohort=3)
    assert profile.apply(RunConfig(method="original_only"), 0).cohort == 3
    assert profile.apply(RunConfig(), 0).cohort == 1  # EnvGen
    assert profile.apply(RunConfig(method="original_only", agent="ad"), 0).cohort == 1
    with pytest.raises(ConfigError, match="cohort"):
        dataclasses.replace(profile, cohort=65)
    pipelined = dataclasses.replace(profile, cohort=4, cohort_groups=2)
    applied = pipelined.apply(RunConfig(method="original_only"), 0)
    assert (applied.cohort, applied.cohort_groups) == (4, 2)
    assert pipelined.apply(RunConfig(), 0).cohort_groups == 1  # EnvGen: no cohort
    with pytest.raises(ConfigError, match="cohort_groups"):
        dataclasses.replace(profile, cohort=3, cohort_groups=2)
    with pytest.raises(ConfigError, match="cohort_groups"):
        dataclasses.replace(profile, cohort_groups=2)  # cohort 1


def test_jobs_are_grouped_by_config_in_seed_order():
    config = tiny_job(0).config.replace(cohort=2)
    jobs = [Job(config, s) for s in (5, 1, 3)] + [tiny_job(0), RandomJob(1, 0)]
    cohorts, rest = split_cohorts(jobs)
    assert [[j.seed for j in c] for c in cohorts] == [[1, 3], [5]]
    assert rest == jobs[3:]


def test_a_cohort_trains_through_the_executor_into_sealed_ordinary_runs(tmp_path):
    config = tiny_job(0, final_steps=512).config.replace(cohort=2)
    jobs = [Job(config, 4), Job(config, 7), Job(config, 9)]  # the third has no partner
    s = settings(tmp_path)
    results = execute(jobs, s, ExecutorConfig(retries=0), log=quiet)
    assert [results[j.key].status for j in jobs] == [DONE, DONE, FAILED]
    assert "multiples of 2" in results[jobs[2].key].reason
    for job in jobs[:2]:
        run = job_dir(job, s.runs_root)
        verify_run(run)  # sealed: manifest over every file
        check_identity(run)  # the folder is the run its files name
        metrics = json.loads((run / "final_metrics.json").read_text())
        assert metrics["seed"] == job.seed and metrics["global_steps"] == 512
        assert metrics["config_hash"] == config.config_hash() == run.parent.name
        cohort = read_provenance(run)["sessions"][-1]["cohort"]
        assert cohort == {"size": 2, "slot": jobs.index(job), "seeds": [4, 7]}
    # a second call finds them finished
    again = execute(jobs[:2], s, ExecutorConfig(retries=0), log=quiet)
    assert all(r.status == DONE for r in again.values())


def test_a_pipelined_cohort_trains_through_the_executor_into_sealed_runs(tmp_path):
    config = tiny_job(0, final_steps=512).config.replace(cohort=4, cohort_groups=2)
    jobs = [Job(config, s) for s in (4, 7, 9, 11)]
    s = settings(tmp_path)
    results = execute(jobs, s, ExecutorConfig(retries=0), log=quiet)
    assert [results[j.key].status for j in jobs] == [DONE] * 4
    for slot, job in enumerate(jobs):
        run = job_dir(job, s.runs_root)
        verify_run(run)
        check_identity(run)
        assert config.config_hash() == run.parent.name
        cohort = read_provenance(run)["sessions"][-1]["cohort"]
        assert cohort == {"size": 4, "slot": slot, "seeds": [4, 7, 9, 11], "groups": 2}


def test_a_gpu_call_starts_only_what_finishes_inside_its_budget():
    from envgen.gpu.chunk import STARTUP_S, fitting_jobs

    config = RunConfig(method="original_only", original_only_steps=1_000_000, model="paper")
    cohort = config.replace(cohort=2)
    jobs = [Job(cohort, 0), Job(cohort, 1), Job(config, 5), RandomJob(1, 0)]
    # at 10,000 env steps/s: the cohort needs 60 + 200 s, the run alone 60 + 100 s
    kept, refused = fitting_jobs(jobs, 300.0, 10_000.0)
    assert kept == [jobs[0], jobs[1], jobs[3]]
    assert len(refused) == 1 and "seed(s) 5" in refused[0] and "40 s left" in refused[0]
    kept, refused = fitting_jobs(jobs, 2 * STARTUP_S + 300.0, 10_000.0)
    assert kept == jobs and not refused
    assert fitting_jobs(jobs, float("inf"), None) == (jobs, [])


def test_a_pipelined_cohort_is_planned_only_with_a_pipelined_measurement(monkeypatch):
    from envgen.gpu.chunk import STARTUP_S, fitting_jobs
    from envgen.pipeline import gpu_plan

    # a grouping no pipelined measurement has (3 groups) has no rate of its own
    assert all(g == 2 for (_, _, _, g) in gpu_plan.MEASURED_PIPELINED_COHORT_SPS)
    assert gpu_plan.cohort_rate("paper", True, 6, groups=3) is None
    rate, source = gpu_plan.cohort_rate("paper", True, 8, groups=2)
    assert rate == gpu_plan.MEASURED_PIPELINED_COHORT_SPS[("paper", "bf16", 8, 2)]
    assert "in 2 groups" in source
    assert gpu_plan.cohort_rate("paper", True, 8, groups=3) is None
    config = RunConfig(method="original_only", original_only_steps=1_000_000, model="paper")
    pipelined = config.replace(bf16_autocast=True, cohort=6, cohort_groups=3)
    jobs = [Job(pipelined, s) for s in range(6)]
    alone = gpu_plan.gpu_rate("paper", None, 1)[0]  # no cohort of 6 in 3 groups measured
    need = STARTUP_S + 6 * pipelined.total_steps / alone
    assert fitting_jobs(jobs, need + 1, None) == (jobs, [])
    assert fitting_jobs(jobs, need - 1, None)[0] == []
    monkeypatch.setitem(gpu_plan.MEASURED_PIPELINED_COHORT_SPS, ("paper", "bf16", 6, 3), 8e3)
    monkeypatch.setattr(gpu_plan, "PIPELINED_COHORT_MEASURED_ON", "one H200")
    rate, source = gpu_plan.cohort_rate("paper", True, 6, groups=3)
    assert rate == 8e3 and "in 3 groups" in source
    assert fitting_jobs(jobs, STARTUP_S + 6e6 / 8e3 + 1, None) == (jobs, [])
