"""Atomic JSON files, so that readers never see a half-written cache entry, run file or
report; and one bounded read, for the JSON and YAML readers that refuse oversized files.

The temporary file is hidden (`.<name>.<random>.tmp`, ignored by git and dvc) and
`remove_stale_temporaries` clears those a killed writer left. Files get the mode any new
file gets (0666 less the umask), not `mkstemp`'s 0600.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envgen.errors import FileWriteError

STALE_AFTER_S = 600.0
"""A temporary file older than this belongs to a killed writer (writes take ms)."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file beside `path`, then rename it into place; a full
    disk or a read-only folder is a `FileWriteError` naming `path`, the file untouched."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise FileWriteError(path, exc) from None
    try:
        umask = os.umask(0o022)  # read by setting and restoring it
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, FileWriteError):
            raise FileWriteError(path, exc) from None
        raise


def remove_stale_temporaries(directory: Path) -> int:
    """Remove `write_json_atomic`'s temporary files in `directory` older than
    `STALE_AFTER_S` (left by killed writers); returns how many."""
    removed = 0
    now = time.time()
    for path in Path(directory).glob(".*.tmp"):
        try:
            if now - path.stat().st_mtime > STALE_AFTER_S:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # another writer finished or cleaned it
            continue
    return removed


def read_bounded(
    path: Path, max_bytes: int, refuse: Callable[[Path, str], Exception], kind: str
) -> bytes:
    """The bytes of the `kind` (JSON, YAML) file `path`, its size checked before it is
    read (a file of gigabytes must not fill the memory); an unreadable or oversized file
    raises `refuse(path, detail)`."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size <= max_bytes:
            return path.read_bytes()
    except OSError as exc:
        raise refuse(path, f"cannot be read ({exc.strerror or exc})") from None
    raise refuse(path, too_large(size, max_bytes, kind))


def too_large(size: int, max_bytes: int, kind: str) -> str:
    """The refusal of a `kind` (JSON, YAML) file of `size` bytes, over `max_bytes`."""
    return (
        f"{size:,} bytes, more than the {max_bytes:,} a {kind} file of this project may hold; "
        "it is not one this project wrote"
    )
