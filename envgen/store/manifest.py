"""A finished run's manifest: every file with its sha256 and record count, written last.

Sealing a run (`seal_run`) gzips its JSON-lines logs (7.2 MB -> 0.19 MB for a 1.96M-step
Crafter run) and then writes `manifest.json`, the mark of a finished run. Every reader
checks what it reads against it (`read_run_bytes`), and `verify_run` a whole directory:
a cut log, an edited number or a missing file is one `EnvGenError` naming the file.

Why gzip'd JSON lines, not Parquet: they keep crafter's `stats.jsonl` schema (`zcat
episodes.jsonl.gz` is the file a Crafter user knows), need only the standard library,
and are within a few percent of Parquet's size here. The gzip header holds no name and
no time, so sealing the same logs twice gives the same bytes.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
import zlib
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.errors import EnvGenError, FileWriteError
from envgen.files import write_json_atomic
from envgen.json_input import JSONInputError

MANIFEST = "manifest.json"
FORMAT = 1
CHECKPOINT_DIR = "checkpoints"
# What a run in progress resumes from (envgen.agents.checkpoint), never a result.
LATEST_CHECKPOINT = Path(CHECKPOINT_DIR) / "latest.pt"
PREVIOUS_CHECKPOINT = Path(CHECKPOINT_DIR) / "previous.pt"  # a cohort's, while it writes
SKIPPED_DIRS = (CHECKPOINT_DIR,)  # never part of a result
LOG_SUFFIX = ".jsonl"
GZ_SUFFIX = ".jsonl.gz"
_SEARCH_DEPTH = 4  # a run file lies at most this deep below its run directory
RESTORE = "restore it from git (git checkout -- PATH) or retrain the run"


class RunStoreError(EnvGenError):
    """A run file does not match its run's manifest, or the manifest is unreadable."""


def is_sealed(run_dir: Path) -> bool:
    """Whether the run finished and was sealed (its manifest exists)."""
    return (Path(run_dir) / MANIFEST).is_file()


def gzip_bytes(data: bytes) -> bytes:
    """`data` gzipped with a header that holds no file name and no time (reproducible)."""
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=out, mtime=0) as f:
        f.write(data)
    return out.getvalue()


def count_records(data: bytes) -> int:
    """Non-blank lines of a JSON-lines file's (uncompressed) bytes."""
    return sum(1 for line in data.splitlines() if line.strip())


def _run_files(run_dir: Path) -> list[Path]:
    """Every result file of the run, sorted: all regular files but the manifest,
    checkpoints and temporary files."""
    return [
        path
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
        and path.relative_to(run_dir).parts[0] not in SKIPPED_DIRS
        and path.relative_to(run_dir).as_posix() != MANIFEST
        and not path.name.endswith(".tmp")
    ]


def _gunzip(path: Path, data: bytes, note: str = "") -> bytes:
    """A sealed log's bytes uncompressed; a `RunStoreError` naming it when damaged."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:  # truncated or corrupted
        raise RunStoreError(
            f"{path}: a damaged gzip log ({exc.__class__.__name__}: {exc}){note}; {RESTORE}"
        ) from None


def _entry(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    entry: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    if path.name.endswith(GZ_SUFFIX):
        entry["records"] = count_records(gzip.decompress(data))
    elif path.name.endswith(LOG_SUFFIX):
        entry["records"] = count_records(data)
    return entry


def seal_run(run_dir: Path) -> Path:
    """Compress the run's logs and write its manifest (last); returns the manifest path.

    Safe to call again after a kill at any point: a log is replaced by its .gz only once
    the .gz is complete, and the manifest is written after everything else. A full disk
    is a `FileWriteError` naming the file; the run stays unsealed and whole.
    """
    run_dir = Path(run_dir)
    for log in sorted(run_dir.rglob("*" + LOG_SUFFIX)):
        rel = log.relative_to(run_dir)
        if rel.parts[0] in SKIPPED_DIRS:
            continue
        gz = log.with_name(log.name + ".gz")
        tmp = log.with_name(log.name + ".gz.tmp")
        try:
            tmp.write_bytes(gzip_bytes(log.read_bytes()))
            os.replace(tmp, gz)
        except OSError as exc:  # a full disk: the plain log stays, sealing can run again
            tmp.unlink(missing_ok=True)
            raise FileWriteError(gz, exc) from None
        log.unlink()
    files = {p.relative_to(run_dir).as_posix(): _entry(p) for p in _run_files(run_dir)}
    path = run_dir / MANIFEST
    write_json_atomic(path, {"format": FORMAT, "files": files})
    _load_manifest.cache_clear()
    return path


@functools.lru_cache(maxsize=256)
def _load_manifest(path: Path, mtime_ns: int) -> dict[str, dict[str, Any]]:
    try:
        data = json_input.read(path)
        files = data["files"]
        if data.get("format") != FORMAT or not isinstance(files, dict):
            raise ValueError(f"unknown manifest format {data.get('format')!r}")
        for name, entry in files.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
                raise ValueError(f"entry {name!r} has no sha256")
    except JSONInputError as exc:
        raise RunStoreError(f"{path}: unreadable run manifest ({exc.detail})") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise RunStoreError(f"{path}: unreadable run manifest ({exc})") from None
    return files


def manifest_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    """{relative path: {sha256, bytes[, records]}} of a sealed run."""
    path = Path(run_dir) / MANIFEST
    return _load_manifest(path, path.stat().st_mtime_ns)


def _governing_manifest(path: Path) -> tuple[Path, str] | None:
    """(run directory, path relative to it) of the sealed run holding `path`, if any."""
    for parent in list(path.parents)[:_SEARCH_DEPTH]:
        if (parent / MANIFEST).is_file():
            return parent, path.relative_to(parent).as_posix()
    return None


def _check(path: Path, data: bytes, entry: dict[str, Any] | None) -> None:
    if entry is None:
        raise RunStoreError(f"{path}: not in its run's manifest (added after the run finished)")
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        detail = f"{len(data)} bytes, manifest says {entry.get('bytes')}"
        if "records" in entry:
            try:
                raw = gzip.decompress(data) if path.name.endswith(".gz") else data
                detail += f"; {count_records(raw)} records, manifest says {entry['records']}"
            except (OSError, EOFError, zlib.error):
                detail += "; not a whole gzip file"
        raise RunStoreError(
            f"{path}: differs from its run's manifest ({detail}); the file was edited or "
            f"truncated: {RESTORE}"
        )


def read_run_bytes(path: Path) -> bytes:
    """The bytes of a run file, checked against its run's manifest when the run is sealed.

    A JSON-lines log asked for by its plain name (`episodes.jsonl`) is read from its
    sealed `.gz` and returned uncompressed.
    """
    path = Path(path)
    if not path.is_file() and path.name.endswith(LOG_SUFFIX):
        gz = path.with_name(path.name + ".gz")
        if gz.is_file():
            return _gunzip(gz, read_run_bytes(gz))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunStoreError(f"{path}: unreadable run file ({exc.strerror or exc})") from None
    governing = _governing_manifest(path)
    if governing is not None:
        run_dir, rel = governing
        _check(path, data, manifest_of(run_dir).get(rel))
    return data


def run_file_exists(path: Path) -> bool:
    """Whether a run file exists, a sealed log under its `.gz` name included."""
    path = Path(path)
    return path.is_file() or (
        path.name.endswith(LOG_SUFFIX) and path.with_name(path.name + ".gz").is_file()
    )


def verify_run(run_dir: Path) -> int:
    """Check every file of a sealed run against its manifest; returns the files checked.

    Raises `RunStoreError` (one line, naming the file) on a missing, changed or
    unlisted file, a log that does not decompress whole to its manifest's record count,
    or when the run is not sealed.
    """
    run_dir = Path(run_dir)
    if not is_sealed(run_dir):
        raise RunStoreError(f"{run_dir}: no {MANIFEST}; the run is unfinished or not sealed")
    listed = manifest_of(run_dir)
    present = {p.relative_to(run_dir).as_posix(): p for p in _run_files(run_dir)}
    for rel in sorted(listed):
        if rel not in present:
            raise RunStoreError(f"{run_dir / rel}: listed in the manifest but missing")
        path, data, entry = present[rel], present[rel].read_bytes(), listed[rel]
        _check(path, data, entry)
        if rel.endswith(GZ_SUFFIX):  # whole: a manifest rewritten over a cut .gz lists it
            records = count_records(_gunzip(path, data, ", though its manifest lists these bytes"))
            if "records" in entry and records != entry["records"]:
                raise RunStoreError(
                    f"{path}: {records} records, its manifest says {entry['records']}; {RESTORE}"
                )
    extra = sorted(set(present) - set(listed))
    if extra:
        raise RunStoreError(f"{run_dir / extra[0]}: not in its run's manifest")
    return len(listed)
