"""The run store: sealing, manifests checked by every reader, provenance per session."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from envgen.agents.runlog import read_jsonl
from envgen.errors import EnvGenError
from envgen.results_version import RESULTS_VERSION
from envgen.store import (
    RunStoreError,
    finish_run,
    is_current,
    is_sealed,
    read_provenance,
    seal_run,
    start_session,
    verify_run,
)
from envgen.store.provenance import summary
from envgen.store.run_dir import read_json

EPISODES = [{"step": 10 * i, "phase": "final", "length": 10, "reward": 1.0} for i in range(1, 31)]


def a_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "abc123" / "seed-0"
    (run_dir / "cycles" / "cycle-01").mkdir(parents=True)
    (run_dir / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EPISODES))
    (run_dir / "cycles" / "cycle-01" / "evaluation.json").write_text('{"step": 5}\n')
    (run_dir / "final_metrics.json").write_text('{"score": 1.5, "global_steps": 300}\n')
    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "latest.pt").write_bytes(b"not part of a result")
    return run_dir


def test_sealing_gzips_logs_and_lists_every_file_with_hash_and_records(tmp_path):
    run_dir = a_run(tmp_path)
    seal_run(run_dir)
    assert is_sealed(run_dir) and not (run_dir / "episodes.jsonl").exists()
    files = json.loads((run_dir / "manifest.json").read_text())["files"]
    assert set(files) == {
        "episodes.jsonl.gz",
        "cycles/cycle-01/evaluation.json",
        "final_metrics.json",
    }
    assert files["episodes.jsonl.gz"]["records"] == 30
    assert read_jsonl(run_dir / "episodes.jsonl") == EPISODES  # readers take the .gz
    assert verify_run(run_dir) == 3
    gz = (run_dir / "episodes.jsonl.gz").read_bytes()
    seal_run(run_dir)  # again (a kill during sealing): same bytes, no header time or name
    assert (run_dir / "episodes.jsonl.gz").read_bytes() == gz


def test_a_log_cut_at_a_line_boundary_is_one_error_naming_the_file(tmp_path):
    run_dir = a_run(tmp_path)
    seal_run(run_dir)
    gz = run_dir / "episodes.jsonl.gz"
    lines = gzip.decompress(gz.read_bytes()).splitlines(keepends=True)
    gz.write_bytes(gzip.compress(b"".join(lines[:14])))  # 16 of 30 episodes removed
    for read in (lambda: read_jsonl(run_dir / "episodes.jsonl"), lambda: verify_run(run_dir)):
        with pytest.raises(RunStoreError) as info:
            read()
        message = str(info.value)
        assert "episodes.jsonl.gz" in message and "14 records, manifest says 30" in message
        assert "\n" not in message


def test_an_edited_json_file_and_a_missing_or_added_file_are_named(tmp_path):
    run_dir = a_run(tmp_path)
    seal_run(run_dir)
    (run_dir / "final_metrics.json").write_text('{"score": 9.5, "global_steps": 300}\n')
    with pytest.raises(RunStoreError, match="final_metrics.json: differs"):
        read_json(run_dir / "final_metrics.json")
    seal_run(run_dir)
    (run_dir / "cycles" / "cycle-01" / "evaluation.json").unlink()
    with pytest.raises(RunStoreError, match="evaluation.json: listed in the manifest but missing"):
        verify_run(run_dir)
    seal_run(run_dir)
    (run_dir / "notes.txt").write_text("added later")
    with pytest.raises(RunStoreError, match="notes.txt: not in its run's manifest"):
        verify_run(run_dir)


def test_sessions_record_machine_software_git_and_resumes(tmp_path):
    run_dir = tmp_path / "r" / "seed-0"
    run_dir.mkdir(parents=True)
    start_session(run_dir, "crafter", 0)
    start_session(run_dir, "crafter", 4096)  # killed, then resumed from a checkpoint
    (run_dir / "final_metrics.json").write_text('{"global_steps": 8192}\n')
    finish_run(run_dir, 8192)
    data = read_provenance(run_dir)
    assert data["results_version"] == RESULTS_VERSION["crafter"] and is_current(run_dir, "crafter")
    first, second = data["sessions"]
    assert (first["event"], first["step"], "ended" in first) == ("start", 0, False)
    assert (second["event"], second["step"], second["end_step"]) == ("resume", 4096, 8192)
    for key in ("cpu", "torch_cpu_capability", "device", "gpu"):
        assert key in second["machine"]
    for key in ("python", "torch", "numpy", "crafter", "procgen-mirror", "lock_sha256"):
        assert key in second["software"]
    assert {"commit", "dirty"} <= set(second["git"]) and second["threads"]["torch_intra_op"] >= 1
    assert second["threads"]["ENVGEN_ENV_WORKERS"] == "1"  # tests/conftest.py sets it
    assert len(data["code_fingerprint"]) == 16
    # each session keeps the code it ran; the top-level one is the last session's
    assert first["code_fingerprint"] == second["code_fingerprint"] == data["code_fingerprint"]
    assert "2 session(s), 1 resume(s)" in summary(data)
    assert verify_run(run_dir) == 2  # provenance.json is part of the sealed run


def test_a_run_resumed_on_changed_code_keeps_each_sessions_fingerprint(tmp_path):
    """A campaign run can resume on a later commit: the first session's code must not be
    overwritten by the resume's (it was, before sessions recorded their own)."""
    run_dir = tmp_path / "r" / "seed-0"
    run_dir.mkdir(parents=True)
    start_session(run_dir, "crafter", 0, fingerprint="a" * 16)
    start_session(run_dir, "crafter", 4096, fingerprint="b" * 16)
    data = read_provenance(run_dir)
    assert [s["code_fingerprint"] for s in data["sessions"]] == ["a" * 16, "b" * 16]
    assert data["code_fingerprint"] == "b" * 16


def test_another_results_version_is_not_current(tmp_path):
    run_dir = tmp_path / "r" / "seed-0"
    run_dir.mkdir(parents=True)
    assert not is_current(run_dir, "crafter")  # no provenance: made before versions
    (run_dir / "provenance.json").write_text(json.dumps({"results_version": 0, "sessions": []}))
    assert not is_current(run_dir, "crafter")


def test_a_run_of_another_results_version_is_not_resumed(tmp_path):
    run_dir = tmp_path / "r" / "seed-0"
    run_dir.mkdir(parents=True)
    start_session(run_dir, "crafter", 0)
    data = read_provenance(run_dir)
    data["results_version"] = RESULTS_VERSION["crafter"] - 1  # then the version was bumped
    (run_dir / "provenance.json").write_text(json.dumps(data))
    with pytest.raises(EnvGenError, match="started under results version .*remove the dir"):
        start_session(run_dir, "crafter", 4096)
    assert len(read_provenance(run_dir)["sessions"]) == 1


def test_machine_label_names_each_machine_a_run_trained_on():
    from envgen.store.provenance import machine_label

    def session(cpu: str, isa: str, device: str = "cpu", gpu=None) -> dict:
        machine = {"cpu": cpu, "torch_cpu_capability": isa, "device": device, "gpu": gpu}
        return {"machine": machine}

    assert machine_label(None) == "unknown"
    assert machine_label({"backfilled": True, "sessions": [session("x", "AVX2")]}) == "unknown"
    one = {"sessions": [session("AMD EPYC", "AVX512"), session("AMD EPYC", "AVX512")]}
    assert machine_label(one) == "AMD EPYC (AVX512), cpu"  # a resume on the same machine
    moved = {"sessions": [*one["sessions"], session("Xeon", "AVX2", "cuda", {"name": "H100"})]}
    assert machine_label(moved) == "AMD EPYC (AVX512), cpu + Xeon (AVX2), cuda (H100)"


def test_a_session_records_the_gpu_kernel_settings_in_force(tmp_path, monkeypatch):
    """`envgen rerun` repeats a run's `--deterministic` from this record."""
    from envgen.agents.device import set_deterministic

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", "")  # recorded, so restored afterwards:
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")  # set_deterministic(True) sets it
    run_dir = tmp_path / "r" / "seed-0"
    run_dir.mkdir(parents=True)
    set_deterministic(True)
    try:
        start_session(run_dir, "crafter", 0)
    finally:
        set_deterministic(False)
    start_session(run_dir, "crafter", 4096)
    first, second = read_provenance(run_dir)["sessions"]
    assert first["kernels"]["deterministic_algorithms"] is True
    assert (first["kernels"]["tf32_cudnn"], second["kernels"]["tf32_cudnn"]) == (False, True)
    assert second["kernels"]["deterministic_algorithms"] is False
