"""Runs per GPU from each run's memory, never more than a card holds; --plan's GPU lines."""

import re
from pathlib import Path

import pytest

from envgen.agents.config import PPOConfig, model_preset
from envgen.loop.config import RunConfig
from envgen.pipeline import gpu_plan
from envgen.pipeline.executor import ExecutorConfig, gpu_fit
from envgen.pipeline.jobs import Settings
from envgen.pipeline.plan import Job
from envgen.pipeline.train import main

CARD, RESERVE = 80 * gpu_plan.GIB, 4 * gpu_plan.GIB


def test_the_paper_network_fits_fewer_runs_than_sixteen_and_ad_fewer_still():
    ppo = gpu_plan.run_memory(model_preset("paper"), PPOConfig(), "ppo")
    ad = gpu_plan.run_memory(model_preset("paper"), PPOConfig(), "ad")
    # saved activations of a 512-observation minibatch: several GiB (a 64x64 IMPALA stack)
    assert 2 * gpu_plan.GIB < ppo.activations < 8 * gpu_plan.GIB and ppo.rows == 512
    assert ad.rows == 3 * 512 and ad.total > 2 * ppo.total
    for memory in (ppo, ad):
        fit = gpu_plan.runs_per_gpu(memory.total, CARD, RESERVE)
        assert fit * memory.total <= CARD - RESERVE < (fit + 1) * memory.total
    assert gpu_plan.runs_per_gpu(ppo.total, CARD, RESERVE) < 16  # the old default started 16
    # a smaller minibatch needs less
    small = gpu_plan.run_memory(model_preset("paper"), PPOConfig(minibatches=16), "ppo")
    assert small.activations == pytest.approx(ppo.activations / 2, rel=0.01)


def test_the_plan_fits_no_more_paper_runs_than_an_h100_held():
    """results/gpu/2026-11-26-h100: on a card with 78.7 GiB free, one paper-network PPO
    run allocated at most 5,578 MiB; eight at once filled the card (80,244 MiB in use,
    10,030 MiB a run) and ten ran out of memory. The plan must leave room on that card
    (the estimate before the measurement put 13 on it)."""
    ppo = gpu_plan.run_memory(model_preset("paper"), PPOConfig(), "ppo")
    assert ppo.allocated == pytest.approx(5578 * 2**20, rel=0.15)
    free, measured_run = int(78.7 * gpu_plan.GIB), 80244 * 2**20 // 8
    assert ppo.total >= measured_run  # no less than a run held when 8 filled the card
    fit = gpu_plan.runs_per_gpu(ppo.total, free, RESERVE)
    assert 1 < fit < 8 and fit * measured_run <= free


@pytest.mark.parametrize(
    ("workers", "gpus_per_run", "fit", "expected"),
    [(0, 0.0, 3, 3), (16, 0.0, 3, 3), (0, 0.5, 3, 2), (2, 0.0, 13, 2), (0, 0.0, None, 16)],
)
def test_local_runs_never_exceed_what_one_gpu_holds(workers, gpus_per_run, fit, expected):
    config = ExecutorConfig(workers=workers, gpus_per_run=gpus_per_run)
    assert config.local_workers(16, 1, fit) == expected


def test_gpu_fit_uses_the_largest_run_and_the_card_size(tmp_path):
    jobs = [
        Job(RunConfig(method="original_only", model="paper"), 0),
        Job(RunConfig(method="original_only", model="paper", agent="ad"), 0),
    ]
    cuda = Settings(runs_root=str(tmp_path), versions={}, device="cuda")
    config = ExecutorConfig(gpu_memory_gib=80)
    lines: list[str] = []
    fit = gpu_fit(jobs, cuda, config, lines.append)
    ad = gpu_plan.job_memory(jobs[1].config)
    assert fit == gpu_plan.runs_per_gpu(ad.total, CARD, RESERVE) and "per GPU" in lines[0]
    assert gpu_fit(jobs, Settings(runs_root=str(tmp_path), versions={}), config) is None
    assert config.gpu_share(fit) * fit >= 1.0  # Ray never packs more than memory holds


def test_plan_prints_runs_per_gpu_and_gpu_hours(capsys):
    assert main(["replication/table1.yaml", "--profile", "paper", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "crafter/paper/ppo:" in out and "runs per GPU" in out
    assert "GPU-hours in all" in out and "ASSUMED" in out
    assert (
        main(["replication/table1.yaml", "--profile", "paper", "--plan", "--gpu-sps", "4000"]) == 0
    )
    assert "measured (--gpu-sps)" in capsys.readouterr().out


def _torch_error(kind: str) -> Exception:
    import torch

    if kind == "torch":
        return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB. " * 5)
    if kind == "cublas":  # what torch raises when cuBLAS cannot allocate its handle
        return RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate`")
    return RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")


@pytest.mark.parametrize("kind", ["torch", "cublas", "other"])
def test_a_run_out_of_gpu_memory_fails_with_the_fix(tmp_path, monkeypatch, kind):
    """The H100's three out-of-memory runs were logged as torch's message cut at 200
    characters, which never reached what to change."""
    from envgen.loop import runner
    from envgen.pipeline.job_status import FAILED
    from envgen.pipeline.jobs import run_job

    def fails(*args, **kwargs):
        raise _torch_error(kind)

    monkeypatch.setattr(runner, "execute_run", fails)
    settings = Settings(runs_root=str(tmp_path), versions={"crafter": "f0"})
    result = run_job(Job(RunConfig(method="original_only"), 0), settings)
    assert result.status == FAILED
    shown = result.reason[:200]  # what the executor's log line keeps
    assert ("execution.gpus_per_run" in shown) == (kind != "other")
    assert str(_torch_error(kind))[:40] in shown


# Where each measured rate of envgen.pipeline.gpu_plan was copied from (repository paths):
# the file must print it. The H100 levels survive only in that call's README (its bench
# log kept the warnings, not the lines).
H100 = "results/gpu/2026-11-26-h100/README.md"
H200_26 = "results/gpu/2026-11-26-h200/"
H200_27 = "results/gpu/2026-11-27-h200/"
STEADY = "results/gpu/2026-11-27-h200-steady/"
MEASURED_SOURCES: dict[tuple, str] = {
    ("gpu", "paper", 1): H100,
    ("gpu", "paper", 4): H100,
    ("gpu", "paper", 8): H100,
    ("cohort", "paper", "float32", 8): H200_26 + "bench_float32_graphed.log",
    ("cohort", "paper", "bf16", 4): STEADY + "bench_bf16_unpipelined_steady.log",
    ("cohort", "paper", "bf16", 8): H200_26 + "bench_bf16_graphed.log",
    ("pipelined", "paper", "bf16", 4, 2): STEADY + "bench_bf16_pipelined_steady.log",
    ("pipelined", "paper", "bf16", 8, 2): STEADY + "bench_bf16_pipelined_steady.log",
    ("pipelined", "paper", "bf16", 16, 2): STEADY + "bench_bf16_pipelined_16.log",
    ("pipelined", "paper", "float32", 8, 2): H200_27 + "bench_float32_pipelined.log",
}


def measured_rates() -> dict[tuple, float]:
    """Every measured rate of envgen.pipeline.gpu_plan, keyed as `MEASURED_SOURCES`."""
    rates: dict[tuple, float] = {}
    for model, levels in gpu_plan.MEASURED_GPU_SPS.items():
        rates.update({("gpu", model, n): v for n, v in levels.items()})
    rates.update({("cohort", *k): v for k, v in gpu_plan.MEASURED_COHORT_SPS.items()})
    rates.update({("pipelined", *k): v for k, v in gpu_plan.MEASURED_PIPELINED_COHORT_SPS.items()})
    rates.update({("kernels", *k): v for k, v in gpu_plan.MEASURED_KERNEL_COHORT_SPS.items()})
    return rates


def unsourced_rates(repo: Path) -> list[str]:
    """The measured rates whose source file is missing, or does not print the rate (as
    1234.5 or 1,234.5, or 942 for a whole number): one line each. Empty when every rate
    here is the one its committed log or README holds."""
    problems = []
    for key, rate in measured_rates().items():
        source = MEASURED_SOURCES.get(key)
        if source is None:
            problems.append(f"{key}: {rate:g} names no source (MEASURED_SOURCES)")
            continue
        path = repo / source
        text = path.read_text(errors="replace") if path.is_file() else None
        if text is None:
            problems.append(f"{key}: {rate:g}: {source} is missing")
            continue
        forms = {f"{rate:.1f}", f"{rate:,.1f}"}
        if rate == int(rate):
            forms |= {f"{int(rate)}", f"{int(rate):,}"}
        if not any(re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", text) for f in forms):
            problems.append(f"{key}: {rate:g} is not what {source} prints")
    return problems


def test_every_measured_rate_is_the_one_its_committed_log_prints(monkeypatch):
    repo = Path(__file__).resolve().parents[1]
    assert unsourced_rates(repo) == []
    key = ("paper", "bf16", 4)
    monkeypatch.setitem(gpu_plan.MEASURED_COHORT_SPS, key, 3_878.7)  # one digit off
    assert unsourced_rates(repo) == [
        "('cohort', 'paper', 'bf16', 4): 3878.7 is not what "
        "results/gpu/2026-11-27-h200-steady/bench_bf16_unpipelined_steady.log prints"
    ]
    monkeypatch.setitem(gpu_plan.MEASURED_COHORT_SPS, ("paper", "bf16", 2), 1.0)
    assert any("names no source" in line for line in unsourced_rates(repo))
