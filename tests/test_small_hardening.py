"""Small things that went wrong: killed writers' temporary files, file modes, the
campaign command's help."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envgen.files import remove_stale_temporaries, write_json_atomic
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
DVC = Path(sys.executable).with_name("dvc")


def test_atomic_files_get_the_normal_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "a.json", {"x": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_stale_temporaries_are_removed_and_fresh_ones_kept(tmp_path):
    stale, fresh = tmp_path / ".a.json.x1.tmp", tmp_path / ".b.json.x2.tmp"
    for path in (stale, fresh):
        path.write_text("{")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert remove_stale_temporaries(tmp_path) == 1
    assert not stale.exists() and fresh.exists()


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this python")
def test_dvc_ignores_a_killed_writers_temporaries():
    names = [
        "data/llm_cache/.0abc.json.k2j3.tmp",
        "results/runs/x/seed-0/checkpoints/latest.pt.tmp",
    ]
    result = subprocess.run([DVC, "check-ignore", *names], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == names
    kept = subprocess.run(
        [DVC, "check-ignore", "data/llm_cache/0abc.json"], cwd=REPO, capture_output=True
    )
    assert kept.returncode == 1  # cache files themselves are tracked


def test_campaign_help_lists_every_action():
    result = envgen_subprocess("campaign", "--help", timeout=120)
    assert result.returncode == 0
    for action in ("start", "status", "stop", "handoff", "collect", "run"):
        assert f"    {action} " in result.stdout, action
    assert "start|status|stop|handoff|collect" in result.stdout
