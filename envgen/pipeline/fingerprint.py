"""A fingerprint of the code a run's result depends on, to catch stale finished runs.

`final_metrics.json` says a run finished, not that the code that would produce it
today is the code that did. The pipeline records this fingerprint in every run it
starts (``code_fingerprint.txt``) and redoes a run whose fingerprint differs
(docs/pipeline.md, "Fingerprint"). It covers the training path: `envgen/agents`,
`envgen/loop`, `envgen/llm`, the Crafter side of `envgen/envs` and `envgen/scoring.py`.
Command-line front ends (``cli.py``) and the Heist engine cannot change a Crafter
run's numbers and are left out, so editing them does not invalidate results.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../envgen
FINGERPRINT_FILE = "code_fingerprint.txt"
COVERED = ("agents", "loop", "llm", "envs", "scoring.py")
EXCLUDED_DIRS = ("envs/heist",)
EXCLUDED_NAMES = ("cli.py", "preview.py")


def covered_files(root: Path = PACKAGE_ROOT) -> list[Path]:
    """The .py files the fingerprint hashes, sorted by their path relative to `root`."""
    files: list[Path] = []
    for entry in COVERED:
        path = root / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return sorted(
        (
            f
            for f in files
            if f.name not in EXCLUDED_NAMES
            and not any(f.relative_to(root).as_posix().startswith(d + "/") for d in EXCLUDED_DIRS)
        ),
        key=lambda f: f.relative_to(root).as_posix(),
    )


def code_fingerprint(root: Path = PACKAGE_ROOT) -> str:
    """16 hex digits of sha256 over (relative path, content) of every covered file."""
    digest = hashlib.sha256()
    for path in covered_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def recorded_fingerprint(run_dir: Path) -> str | None:
    """The fingerprint a run directory was started with, or None if it has none."""
    path = run_dir / FINGERPRINT_FILE
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def record_fingerprint(run_dir: Path, fingerprint: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / FINGERPRINT_FILE).write_text(fingerprint + "\n", encoding="utf-8")
