"""A fingerprint of the code a run's result depends on: provenance, not currency.

Every run records it in `provenance.json`, so a reader can tell which code produced it;
whether a run is current is its results version's call (`envgen.results_version`):
editing a comment changes the fingerprint and no result. It covers the training path
(`COVERED`), minus command-line front ends; a game's own engine (`GAME_DIRS`: Heist's)
only in that game's runs, as it cannot change another game's numbers.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../envgen
COVERED = ("agents", "loop", "llm", "envs", "games.py", "scoring.py")
GAME_DIRS = {"heist": "envs/heist"}  # a game's own engine: in its runs' fingerprint only
EXCLUDED_NAMES = ("cli.py", "preview.py")


def covered_files(game: str = "crafter", root: Path = PACKAGE_ROOT) -> list[Path]:
    """The .py files `game`'s fingerprint hashes, sorted by their path relative to `root`."""
    excluded = [d for g, d in GAME_DIRS.items() if g != game]
    files: list[Path] = []
    for entry in COVERED:
        path = root / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return sorted(
        (
            f
            for f in files
            if f.name not in EXCLUDED_NAMES
            and not any(f.relative_to(root).as_posix().startswith(d + "/") for d in excluded)
        ),
        key=lambda f: f.relative_to(root).as_posix(),
    )


def code_fingerprint(game: str = "crafter", root: Path = PACKAGE_ROOT) -> str:
    """16 hex digits of sha256 over (relative path, content) of every file `game` covers."""
    digest = hashlib.sha256()
    for path in covered_files(game, root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
