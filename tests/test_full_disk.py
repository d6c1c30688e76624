"""A full disk or a read-only folder where a run's provenance, its sealed logs or a
campaign's tables are written: one line naming the path and the fix, never an OSError
traceback, and nothing half-written left behind.

Simulated (tests may run as root, whom a read-only mode does not stop): the writes fail
as the kernel would fail them, with ENOSPC or EACCES."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest

from envgen import cli, files, input_checks
from envgen.errors import EnvGenError, FileWriteError
from envgen.store.lifecycle import start_session
from envgen.store.manifest import seal_run

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests/data/guard/envgen_random_authors.yaml"


def _failing_atomic_writes(monkeypatch, name: str, code: int) -> None:
    """`write_json_atomic` of files called `name` fails with `code` at its fsync (a full
    disk) or, for EACCES, at creating its temporary file (a read-only folder)."""
    real_mkstemp, real_fsync, doomed = tempfile.mkstemp, os.fsync, set()

    def mkstemp(*args, **kwargs):
        if kwargs.get("prefix", "").startswith(f".{name}.") and code == errno.EACCES:
            raise PermissionError(code, os.strerror(code))
        fd, tmp = real_mkstemp(*args, **kwargs)
        if Path(tmp).name.startswith(f".{name}."):
            doomed.add(fd)
        return fd, tmp

    def fsync(fd: int) -> None:
        if fd in doomed:
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(files.os, "fsync", fsync)


def test_a_full_disk_at_a_session_start_names_the_provenance_and_the_fix(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _failing_atomic_writes(monkeypatch, "provenance.json", errno.ENOSPC)
    with pytest.raises(EnvGenError) as err:
        start_session(run_dir, "crafter", 0)
    assert str(err.value) == (
        f"{run_dir / 'provenance.json'}: cannot be written (No space left on device); free "
        "space on its disk, then run the command again"
    )
    assert isinstance(err.value, OSError) and err.value.errno == errno.ENOSPC
    assert list(run_dir.iterdir()) == []  # no temporary file, no half a provenance


def test_a_full_disk_while_sealing_names_the_log_and_keeps_the_run_whole(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "episodes.jsonl").write_text('{"length": 1}\n')
    (run_dir / "final_metrics.json").write_text(json.dumps({"score": 1.0}))
    real = Path.write_bytes

    def write_bytes(path: Path, data: bytes) -> int:
        if path.name.endswith(".gz.tmp"):
            real(path, data[:10])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    with pytest.raises(FileWriteError, match=r"episodes\.jsonl\.gz: cannot be written \(No space"):
        seal_run(run_dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["episodes.jsonl", "final_metrics.json"]
    monkeypatch.undo()
    seal_run(run_dir)  # once there is space, sealing completes
    assert (run_dir / "manifest.json").is_file()


def test_campaign_collect_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys):
    out = tmp_path / "campaign_sfl"
    _failing_atomic_writes(monkeypatch, "runs.json", errno.EACCES)
    monkeypatch.chdir(REPO)
    names = ("runs.json", "metrics.json", "scores.json")
    paths = [str(out / n) for n in names]
    code = cli.main(
        [
            "campaign",
            "collect",
            "sfl",
            "--out",
            paths[0],
            "--metrics",
            paths[1],
            "--plots",
            paths[2],
        ]
    )
    text = capsys.readouterr()
    lines = (text.out + text.err).strip().splitlines()
    assert code != 0 and len(lines) == 1, lines
    assert f"{out / 'runs.json'}: cannot be written (Permission denied)" in lines[0]
    assert "make its folder writable" in lines[0]
    assert not out.exists() or not list(out.iterdir())


def test_envgen_run_into_a_read_only_runs_root_is_one_line(tmp_path, monkeypatch, capsys):
    runs_root = tmp_path / "runs"
    runs_root.mkdir()
    real = os.access
    monkeypatch.setattr(
        input_checks.os, "access", lambda p, mode: Path(p) != runs_root and real(p, mode)
    )
    code = cli.main(["run", str(CONFIG), "--seed", "0", "--runs-root", str(runs_root)])
    text = capsys.readouterr()
    lines = (text.out + text.err).strip().splitlines()
    assert code != 0 and len(lines) == 1, lines
    assert f"{runs_root} is not writable; make it writable or give another directory" in lines[0]
    assert list(runs_root.iterdir()) == []
