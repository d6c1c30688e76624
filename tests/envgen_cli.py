"""`envgen ARGS` in a fresh interpreter, for tests of what a user sees at the shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def envgen_subprocess(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`python -m envgen.cli ARGS` importing this checkout's envgen (PYTHONPATH), output
    captured as text, exit code left to the caller."""
    return subprocess.run(
        [sys.executable, "-m", "envgen.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=timeout,
    )
