"""The executor on real tiny runs: parallel workers, skip, stale redo, retry, kill + rerun."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envgen.errors import LLMResponseError, LLMTransportError
from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.request import ChatRequest, ChatResponse, Usage
from envgen.loop.config import RunConfig
from envgen.loop.runner import RunOptions, execute_run
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import DONE, FAILED, LLM_UNUSABLE, NOT_RECORDED, job_dir
from envgen.pipeline.jobs import LLMSpec, Settings
from envgen.pipeline.plan import Job, RandomJob
from envgen.results_version import RESULTS_VERSION
from envgen.store import recorded_version, seal_run, verify_run

TINY_PPO = {"num_envs": 2, "num_steps": 32, "minibatches": 2, "checkpoint_every": 100_000}
REPO = Path(__file__).resolve().parents[1]


def tiny_job(seed: int, final_steps: int = 2048) -> Job:
    """1024 steps per env: a near-random agent's episodes end well before, on any machine."""
    config = RunConfig(
        method="original_only",
        n_cycles=1,
        llm_env_steps=0,
        orig_env_steps=0,
        final_steps=final_steps,
        model="nature",
        ppo=tuple(sorted(TINY_PPO.items())),
    )
    return Job(config, seed)


def settings(tmp_path: Path, version: int = RESULTS_VERSION["crafter"]) -> Settings:
    llm = LLMSpec("replay", str(REPO / "data" / "llm_cache"))
    return Settings(runs_root=str(tmp_path / "runs"), versions={"crafter": version}, llm=llm)


def mtime(job, s: Settings) -> int:
    return (job_dir(job, s.runs_root) / "final_metrics.json").stat().st_mtime_ns


def quiet(_message: str) -> None:
    pass


def test_parallel_runs_then_skip_then_stale_redo(tmp_path):
    jobs = [tiny_job(0), RandomJob(episodes=1, seed=0)]
    s = settings(tmp_path)
    config = ExecutorConfig(workers=2, retries=0)
    results = execute(jobs, s, config, log=quiet)
    assert [results[j.key].status for j in jobs] == [DONE, DONE]
    first = {j.key: mtime(j, s) for j in jobs}
    metrics = json.loads((job_dir(jobs[0], s.runs_root) / "final_metrics.json").read_text())
    assert metrics["global_steps"] == 2048 and metrics["episodes"] >= 1

    for job in jobs:  # finished runs are sealed: provenance, gzipped logs, manifest last
        run_dir = job_dir(job, s.runs_root)
        assert verify_run(run_dir) >= 3 and (run_dir / "episodes.jsonl.gz").is_file()
        assert recorded_version(run_dir) == RESULTS_VERSION["crafter"]

    execute(jobs, s, config, log=quiet)  # same results version: nothing is redone
    assert {j.key: mtime(j, s) for j in jobs} == first

    bumped = settings(tmp_path, version=RESULTS_VERSION["crafter"] + 1)
    execute(jobs[1:], bumped, config, log=quiet)
    assert mtime(jobs[1], s) != first[jobs[1].key]  # another version: the run is redone


@pytest.mark.parametrize(
    "damage",
    [
        "manifest cut",
        "provenance edited",
        "provenance missing",
        "provenance missing, resealed",
        "version a string, resealed",
        "version missing, resealed",
    ],
)
def test_a_run_with_a_damaged_manifest_or_provenance_is_kept_and_its_job_fails(tmp_path, damage):
    """A damaged file is not another results version: the run is never deleted (a sealed
    run without provenance, or with a version "1", was deleted and retrained)."""
    job = RandomJob(episodes=1, seed=0)
    s = settings(tmp_path)
    assert execute([job], s, ExecutorConfig(workers=1, retries=0), quiet)[job.key].status == DONE
    run_dir = job_dir(job, s.runs_root)
    if damage == "manifest cut":
        manifest = run_dir / "manifest.json"
        manifest.write_bytes(manifest.read_bytes()[:100])
    elif damage == "provenance edited":
        provenance = run_dir / "provenance.json"
        provenance.write_text(provenance.read_text().replace('"sessions"', '"session5"', 1))
    elif damage.startswith("provenance missing"):
        (run_dir / "provenance.json").unlink()
    else:
        provenance = run_dir / "provenance.json"
        data = json.loads(provenance.read_text())
        if damage.startswith("version a string"):
            data["results_version"] = str(data["results_version"])
        else:
            del data["results_version"]
        provenance.write_text(json.dumps(data))
    if damage.endswith("resealed"):
        seal_run(run_dir)
    before = sorted((p.relative_to(run_dir), p.read_bytes()) for p in run_dir.rglob("*.*"))
    result = execute([job], s, ExecutorConfig(workers=1, retries=0), quiet)[job.key]
    assert result.status == FAILED and "the run is kept" in result.reason
    assert sorted((p.relative_to(run_dir), p.read_bytes()) for p in run_dir.rglob("*.*")) == before


def test_failed_runs_are_retried_and_reported(tmp_path):
    bad = tiny_job(0).config.replace(ppo={**TINY_PPO, "minibatches": 3})  # 3 does not divide 64
    job = Job(bad, 0)
    results = execute([job], settings(tmp_path), ExecutorConfig(workers=1, retries=1), quiet)
    result = results[job.key]
    assert result.status == FAILED and result.attempts == 2
    assert "ppo.minibatches" in result.reason


def test_missing_llm_reply_is_not_recorded_and_leaves_no_directory(tmp_path):
    config = RunConfig(method="fixed", llm_model="gpt-3.5-turbo", model="nature")
    job = Job(config, 0)
    s = settings(tmp_path)
    result = execute([job], s, ExecutorConfig(workers=1, retries=3), quiet)[job.key]
    assert result.status == NOT_RECORDED and result.attempts == 1
    assert "envgen llm record --backend openai --model gpt-3.5-turbo" in result.reason
    assert not job_dir(job, s.runs_root).exists()


def refusal(request: ChatRequest) -> ChatResponse:
    """A server that answers every call with prose instead of environments."""
    return ChatResponse("I cannot design environments.", "gpt-3.5-turbo", Usage(9, 6), "stop", 0)


def test_recorded_unusable_reply_is_llm_unusable_and_not_retried(tmp_path):
    cache = tmp_path / "cache"
    config = RunConfig(method="fixed", llm_model="gpt-3.5-turbo", model="nature")
    backend = backend_config("openai", model="gpt-3.5-turbo")
    recorder = CachedLLM("record", cache, backend, client_factory=lambda _b: refusal)
    with pytest.raises(LLMResponseError):  # records the reply and the designer's re-asks
        execute_run(config, 0, str(tmp_path / "recording"), recorder, RunOptions())
    assert recorder.ledger.summary()["calls"] >= 2

    job = Job(config, 0)
    s = Settings(str(tmp_path / "runs"), {"crafter": "f0"}, llm=LLMSpec("replay", str(cache)))
    result = execute([job], s, ExecutorConfig(workers=1, retries=3), quiet)[job.key]
    assert result.status == LLM_UNUSABLE and result.attempts == 1
    assert result.reason.startswith("crafter/initial/")


KILL_SCRIPT = """
import sys
from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.plan import RandomJob
from tests.test_pipeline_executor import settings, tiny_job
from pathlib import Path
execute([RandomJob(1, 0), tiny_job(1)], settings(Path(sys.argv[1])),
        ExecutorConfig(workers=1, retries=0))
"""


def test_killed_executor_reruns_without_redoing_finished_runs(tmp_path):
    s = settings(tmp_path)
    first, second = RandomJob(1, 0), tiny_job(1)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(tmp_path)],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    done_file = job_dir(first, s.runs_root) / "final_metrics.json"
    deadline = time.monotonic() + 240
    while not done_file.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert done_file.is_file(), "the first run should finish before the kill"
    time.sleep(1.0)  # the second run is under way
    os.killpg(proc.pid, signal.SIGKILL)  # the executor, its worker and its env processes
    proc.wait()
    assert not (job_dir(second, s.runs_root) / "final_metrics.json").is_file()
    finished_at = mtime(first, s)

    results = execute([first, second], s, ExecutorConfig(workers=1, retries=0), quiet)
    assert results[second.key].status == DONE
    assert mtime(first, s) == finished_at


@pytest.mark.parametrize(("cores", "gpus", "expected"), [(2, 0, 2), (16, 1, 4), (16, 0, 8)])
def test_local_workers_are_sized_to_the_machine(cores, gpus, expected):
    config = ExecutorConfig(env_workers=2 if cores == 16 and not gpus else 1, gpus_per_run=0.25)
    if not gpus:
        config = ExecutorConfig(env_workers=config.env_workers)
    assert config.local_workers(cores, gpus) == expected


def test_a_server_that_cannot_be_reached_fails_the_job_instead_of_being_its_result(
    tmp_path, monkeypatch
):
    """A crashed local server (seen: a native llama.cpp build segfaulting on AMX CPUs)
    answers "Connection error."; that is retried, never recorded as llm_unusable."""
    from envgen.llm.client import OpenAIChat
    from envgen.llm.request import Message
    from envgen.loop import runner
    from envgen.pipeline.jobs import run_job

    closed = backend_config("local", base_url="http://127.0.0.1:9/v1")
    request = ChatRequest((Message("user", "hi"),), temperature=0, seed=0, max_tokens=8)
    with pytest.raises(LLMTransportError, match="cannot reach") as raised:
        OpenAIChat(closed)(request)
    unusable = LLMResponseError("found 1 usable environment of 4")
    settings = Settings(runs_root=str(tmp_path), versions=dict(RESULTS_VERSION))
    for error, status in ((raised.value, FAILED), (unusable, LLM_UNUSABLE)):

        def fails(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr(runner, "execute_run", fails)
        assert run_job(Job(RunConfig(method="original_only"), 0), settings).status == status
