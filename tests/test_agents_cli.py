"""`envgen train` and `envgen bench train` through the real CLI, at tiny scale."""

import json
import subprocess
import sys

import pytest

from envgen.cli import main

TINY = ["--num-envs", "2", "--num-steps", "16", "--minibatches", "2", "--workers", "1"]


def _envgen(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-W", "ignore", "-m", "envgen.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)


def test_train_help_explains(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    assert "--resume" in text and "holds the running episodes" in text and "nature" in text


@pytest.mark.slow
def test_train_then_resume(tmp_path):
    out = tmp_path / "run"
    common = ["train", "--seed", "0", "--out", str(out), "--no-progress", *TINY]
    first = _envgen(*common, "--steps", "64", "--checkpoint-every", "32")
    assert json.loads(first.stdout.splitlines()[-1])["steps"] == 64
    assert (out / "checkpoints" / "latest.pt").exists() and (out / "summary.json").exists()
    second = _envgen(*common, "--steps", "96", "--checkpoint-every", "32", "--resume")
    assert "resumed at step 64" in second.stdout
    assert json.loads(second.stdout.splitlines()[-1])["steps"] == 96
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [32, 64, 96]


@pytest.mark.slow
def test_bench_train_prints_json():
    result = _envgen("bench", "train", "--rollouts", "1", "--concurrency", "1,2", *TINY)
    last = json.loads(result.stdout.splitlines()[-1])
    assert last["device"] == "cpu" and [level["runs"] for level in last["levels"]] == [1, 2]
    for level in last["levels"]:
        assert min(level[k] for k in ("total_sps", "collect_sps", "update_sps", "peak_mib")) > 0
    assert last["ours_sps"] == last["levels"][0]["total_sps"] > 0 and last["reference_sps"] > 0
    assert last["ratio"] == pytest.approx(last["ours_sps"] / last["reference_sps"], rel=0.01)
    # --no-reference: tests/test_gpu_driver.py::test_bench_writes_both_agents
