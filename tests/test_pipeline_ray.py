"""The Ray executor: a local Ray instance, and a two-node cluster on this machine."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from envgen.pipeline.executor import ExecutorConfig, execute
from envgen.pipeline.job_status import DONE, job_dir
from envgen.pipeline.plan import RandomJob
from tests.ray_reaper import kill_own_processes, own_processes, reap_when_gone
from tests.test_pipeline_executor import REPO, quiet, settings

ray = pytest.importorskip("ray")
RAY = str(Path(sys.executable).with_name("ray"))
PORT = 6391 + os.getpid() % 500


@pytest.fixture(scope="module", autouse=True)
def _ray_ends_with_this_process():
    """Ray's daemons under a directory of this module's, reaped when this process ends
    however it ends (`tests.ray_reaper`)."""
    temp_dir = tempfile.mkdtemp(prefix="rr", dir="/tmp")  # short: Ray's socket paths
    reap_when_gone(temp_dir, os.getpid())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", temp_dir)
        yield temp_dir


INNER = """
import os, tempfile, time
import ray
from tests.ray_reaper import reap_when_gone

def test_start_ray_then_wait_to_be_killed():
    temp = tempfile.mkdtemp(prefix="rk", dir="/tmp")
    reap_when_gone(temp, os.getpid())
    os.environ["RAY_TMPDIR"] = temp
    ray.init(num_cpus=1, include_dashboard=False)
    print("READY", temp, flush=True)
    time.sleep(600)
"""


def test_a_killed_test_run_leaves_no_ray_process(tmp_path):
    inner = tmp_path / "test_inner_ray.py"
    inner.write_text(INNER)
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(inner)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    temp = None
    try:
        for line in run.stdout:
            if "READY" in line:
                temp = line.split("READY", 1)[1].strip()
                break
        assert temp and own_processes(temp), "Ray did not start"
    finally:
        run.kill()  # SIGKILL: no clean-up of its own runs
        run.wait()
    deadline = time.monotonic() + 60
    # the watcher kills Ray's processes, then removes their directory
    while (own_processes(temp) or Path(temp).exists()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert own_processes(temp) == []
    assert not Path(temp).exists()


@pytest.fixture(scope="module", autouse=True)
def _workers_at_normal_priority():
    """Ray starts its task workers at nice 15; beside another busy process (the other
    xdist worker of `make test`, a training run) they then get a few percent of a core,
    and a two-job test took 246 s instead of about 20. The priority changes no number."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_worker_niceness", "0")  # read by the raylet, which inherits it
        yield


def test_local_ray_instance_runs_jobs_and_skips_finished_ones(tmp_path):
    jobs = [RandomJob(1, 0), RandomJob(1, 1)]
    s = settings(tmp_path)
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        results = execute(jobs, s, ExecutorConfig(kind="ray", retries=0), quiet)
        assert [results[j.key].status for j in jobs] == [DONE, DONE]
        stamp = (job_dir(jobs[0], s.runs_root) / "final_metrics.json").stat().st_mtime_ns
        execute(jobs, s, ExecutorConfig(kind="ray", retries=0), quiet)
        assert (job_dir(jobs[0], s.runs_root) / "final_metrics.json").stat().st_mtime_ns == stamp
    finally:
        ray.shutdown()


def test_two_node_cluster_on_loopback(tmp_path):
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths
    common = ["--num-cpus", "1", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
    address = f"127.0.0.1:{PORT}"
    try:
        subprocess.run(
            [
                RAY,
                "start",
                "--head",
                "--port",
                str(PORT),
                "--temp-dir",
                temp_dir,
                "--include-dashboard",
                "false",
                *common,
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [RAY, "start", "--address", address, *common], check=True, capture_output=True
        )
        jobs = [RandomJob(1, 0), RandomJob(1, 1)]
        config = ExecutorConfig(kind="ray", retries=0, ray_address=address)
        results = execute(jobs, settings(tmp_path), config, quiet)
        assert [results[j.key].status for j in jobs] == [DONE, DONE]
        assert sum(node["Alive"] for node in ray.nodes()) == 2
    finally:
        ray.shutdown()
        survivors = kill_own_processes(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert survivors == []


# One Table 1 row per kind of job a worker runs: a plain PPO run, an EnvGen run whose
# LLM calls replay from the cache inside the worker, and the random policy. The AD rows
# differ from the PPO ones only in config fields the executor never reads, and they
# cost four times as much: with them and both seeds this test took 797 s on a 2-core
# AVX2 EPYC and over pytest's 900 s timeout on CI (docs/measurements.md).
RAY_ROWS = ("PPO", "PPO + EnvGen", "Random")


@pytest.mark.slow
def test_smoke_table1_through_the_ray_executor_matches_the_committed_results(tmp_path):
    """The train stage as DVC runs it, with `executor: ray` (a local Ray instance), on
    Table 1's smoke rows of RAY_ROWS, seed 0: they end as the committed
    results/table1/runs.json says: the same statuses, runs and replay coverage.
    Scores are not compared: the committed ones come from the recording machine, whose
    float results another CPU does not repeat."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert params["profile"] == "smoke"
    params["executor"] = "ray"
    params["execution"]["retries"] = 0
    params["profiles"]["smoke"]["seeds"] = [0]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    table = yaml.safe_load((REPO / "replication" / "table1.yaml").read_text())
    table["rows"] = [row for row in table["rows"] if row["row"] in RAY_ROWS]
    assert [row["row"] for row in table["rows"]] == list(RAY_ROWS)
    table["reported_only"] = []
    (tmp_path / "table1.yaml").write_text(yaml.safe_dump(table))
    out = tmp_path / "runs.json"
    cmd = [sys.executable, "-m", "envgen.pipeline.train", str(tmp_path / "table1.yaml")]
    cmd += ["--params", str(tmp_path / "params.yaml"), "--runs-root", str(tmp_path / "runs")]
    subprocess.run([*cmd, "--out", str(out)], cwd=REPO, check=True, capture_output=True)

    ours = json.loads(out.read_text())
    committed = json.loads((REPO / "results" / "table1" / "runs.json").read_text())
    assert ours["results_version"] == committed["results_version"], (
        "results/ are from other code: run `make repro` and commit them"
    )
    theirs_by_row = {row["row"]: row for row in committed["rows"]}
    assert [r["row"] for r in ours["rows"]] == list(RAY_ROWS)
    for mine in ours["rows"]:
        theirs = theirs_by_row[mine["row"]]
        assert mine["status"] == theirs["status"] == "done"
        assert mine["config_hash"] == theirs["config_hash"]
        assert [r["seed"] for r in mine["runs"]] == [0] == [r["seed"] for r in theirs["runs"]][:1]
        assert all(r["episodes"] > 0 for r in mine["runs"])
        assert ("llm_replay" in mine) == ("llm_replay" in theirs)
        if "llm_replay" in theirs:
            served = mine["llm_replay"]
            assert served["calls"] == theirs["runs"][0]["llm_replay"]["calls"]  # seed 0's
            assert served["exact"] + served["slot"] == served["calls"]  # none missing, none live
