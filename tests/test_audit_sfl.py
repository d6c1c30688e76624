"""results/audit/sfl_open_ends: its committed analysis.out is what its command prints
from the committed runs today (the README's figures are that file's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.envgen_cli import REPO

AUDIT = REPO / "results" / "audit" / "sfl_open_ends"


@pytest.mark.slow
def test_the_sfl_audit_output_is_rederived_from_the_runs():
    done = subprocess.run(
        [sys.executable, str(AUDIT / "analysis.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (AUDIT / "analysis.out").read_text()
