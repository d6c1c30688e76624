"""`envgen gpu probe` run tiny on the CPU: the device session's checks (envgen.gpu.probe)
hold where nothing is captured, a broken check is reported, and the rate a training call
is sized from (envgen.gpu.rate) is the fastest unpipelined cohort of the bench line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envgen.errors import ConfigError
from envgen.gpu import probe, rate

REPO = Path(__file__).resolve().parents[1]


def test_the_kernel_checks_hold_on_the_cpu_and_a_broken_one_is_named(monkeypatch):
    entries = probe.kernel_checks("cpu", probe.TINY_MODEL, probe.TINY_PPO, [4], [False], ["graph"])
    assert [(e["cohort"], e["kernels"], e["captured"]) for e in entries] == [(4, "graph", False)]
    assert probe.failed(entries, on_cuda=False) == []
    assert probe.failed(entries, on_cuda=True) == ["4/float32/graph: captured"]
    # a mode whose replay rounds differently from its uncaptured run is caught
    real = probe._train

    def drifting(*args, capture, **kwargs):
        losses, params, captured = real(*args, capture=capture, **kwargs)
        if not capture:
            params = {k: v + (1e-6 if k.endswith("bias") else 0) for k, v in params.items()}
        return losses, params, captured

    monkeypatch.setattr(probe, "_train", drifting)
    entries = probe.kernel_checks("cpu", probe.TINY_MODEL, probe.TINY_PPO, [4], [False], ["graph"])
    assert probe.failed(entries, on_cuda=False) == ["4/float32/graph: replay_equals_uncaptured"]


BENCH = {
    "device": "NVIDIA H200",
    "model": "paper",
    "mode": "bf16",
    "baseline_runs": 1,
    "baseline_sps": 1300.0,
    "cohorts": [
        {"cohort": 4, "groups": 1, "kernels": "eager", "env_workers": 15, "cohort_sps": 3900.0},
        {"cohort": 4, "groups": 2, "kernels": "eager", "env_workers": 15, "cohort_sps": 9999.0},
        {"cohort": 4, "groups": 1, "kernels": "graph", "env_workers": 15, "cohort_sps": 9300.0},
        {"cohort": 4, "groups": 1, "kernels": "compile", "env_workers": 15, "cohort_sps": 8800.0},
    ],
}


def test_the_rate_is_the_fastest_unpipelined_cohort_beside_its_baseline(tmp_path):
    bench = tmp_path / "bench.log"
    bench.write_text("cohort of 4 (graph): ...\n" + json.dumps(BENCH) + "\n")
    out = tmp_path / "rate.json"
    subprocess.run(
        [sys.executable, "-m", "envgen.cli", "gpu", "probe", "rate", str(bench), "--out", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    picked = rate.read_rate(out)
    assert (picked["cohort"], picked["kernels"], picked["cohort_sps"]) == (4, "graph", 9300.0)
    assert picked["baseline_sps"] == 1300.0
    assert picked["ratio"] == pytest.approx(9300 / 1300, 1e-3)
    with pytest.raises(ConfigError, match="no unpipelined cohort"):
        rate.pick_rate({**BENCH, "cohorts": BENCH["cohorts"][1:2]})
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a rate file"):
        rate.read_rate(tmp_path / "bad.json")


def _probe_rate(bench: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "envgen.cli", "gpu", "probe", "rate", str(bench), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


def test_the_rate_is_read_from_the_last_json_line_and_its_absence_is_one_line(tmp_path):
    # bench train's result so far after each cohort, then a cohort that failed
    so_far = [{**BENCH, "cohorts": BENCH["cohorts"][:k]} for k in (1, 2, 3)]
    bench = tmp_path / "bench.log"
    bench.write_text(
        "\n".join(
            [json.dumps(so_far[0]), "cohort of 4 (graph): ..."]
            + [json.dumps(line) for line in so_far[1:]]
            + ["cohort of 4 (compile): ...", "envgen bench train: cohort_kernels: failed", "{cut"]
        )
    )
    out = tmp_path / "rate.json"
    assert _probe_rate(bench, out).returncode == 0
    picked = rate.read_rate(out)
    assert (picked["kernels"], picked["cohort_sps"]) == ("graph", 9300.0)
    assert set(picked["all"]) == {"4/eager", "4/graph"}
    (tmp_path / "none.log").write_text("device: NVIDIA H200\ncohort of 4 (eager): failed\n")
    cohort = {"cohort": 4, "groups": 1, "cohort_sps": 1.0}
    (tmp_path / "other.log").write_text(json.dumps({"device": "H200", "cohorts": [cohort]}))
    for name, words in [
        ("none.log", "no JSON line"),
        ("missing.log", "no such file"),
        ("other.log", "not bench train's"),
    ]:
        done = _probe_rate(tmp_path / name, tmp_path / "r.json")
        assert done.returncode == 1, name
        assert "Traceback" not in done.stderr, name
        (line,) = (done.stdout + done.stderr).strip().splitlines()
        assert words in line, name
    assert not (tmp_path / "r.json").exists()


def test_the_session_params_train_table_1s_ppo_row_in_whole_cohorts_of_the_rate(tmp_path):
    (tmp_path / "rate.json").write_text(json.dumps(rate.pick_rate(BENCH)))
    out = tmp_path / "params.yaml"
    subprocess.run(
        [sys.executable, "-m", "envgen.cli", "gpu", "probe", "params", str(tmp_path / "rate.json")]
        + ["--out", str(out), "--params", str(REPO / "params.yaml")],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    from envgen.pipeline.params_stage import load_settings
    from envgen.pipeline.plan import plan_file

    profile, executor = load_settings(out, rate.SESSION_PROFILE)
    assert (profile.cohort, profile.cohort_kernels, profile.bf16_autocast) == (4, "graph", True)
    # the bench's worker count, not params.yaml's CPU one (1): the rate holds only with it
    assert executor.env_workers == 15
    assert load_settings(REPO / "params.yaml", "paper")[1].env_workers == 1
    assert list(profile.seeds) == list(range(12))  # 3 whole cohorts of 4 cover 10 seeds
    (row,) = [
        r for r in plan_file(REPO / "replication" / "table1.yaml", profile).rows if r.name == "PPO"
    ]
    configs = {job.config for job in row.jobs}
    assert len(configs) == 1
    (config,) = configs
    assert (config.cohort, config.cohort_kernels, config.bf16_autocast) == (4, "graph", True)
    assert config.total_steps == 1_000_000


def test_the_rate_and_params_commands_run_without_torch():
    """They run wherever the rate file is, torch installed or not (call B reads call A's)."""
    code = "import sys, envgen.gpu.rate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_rate_without_the_benchs_worker_count_writes_no_params(tmp_path):
    old = {k: v for k, v in rate.pick_rate(BENCH).items() if k != "env_workers"}
    (tmp_path / "rate.json").write_text(json.dumps(old))
    out = tmp_path / "params.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "envgen.cli", "gpu", "probe", "params", str(tmp_path / "rate.json")]
        + ["--out", str(out), "--params", str(REPO / "params.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "env_workers None" in done.stderr and "run call A again" in done.stderr
    assert not out.exists()
