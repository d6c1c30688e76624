"""Finished runs in and out of a machine that returns at most a few small files.

`pack_runs` puts the finished runs of a run store (sealed: `manifest.json`; or, from
older code, `final_metrics.json`) into `runs-NN.tar.gz` files of at most `max_bytes`,
at most `max_files` of them per call, each run whole (its directory less `checkpoints/`
and temporary files: the files its manifest lists). A list in the store remembers what
was packed, so the next call sends only runs that finished since.

`import_archives` unpacks such files into a run store (results/runs): every member must
be a plain file or directory under `runs/<run>/seed-<K>/`, no absolute path, no `..`,
no link or device (anything else refuses the whole archive, naming the member); each
run is checked against its manifest (`envgen.store.verify_run`, where that module
exists), every run of every archive before any is moved into place (a damaged one
imports nothing), and a run already in the store is kept as it is.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from envgen.errors import EnvGenError

MiB = 2**20
MAX_BYTES = 16 * MiB
MAX_FILES = 8
PACKED = ".gpu_packed.json"  # in the run store: runs already packed
SKIPPED_DIRS = ("checkpoints",)  # the run store's rule: never part of a result
RUN_PART = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]*$")
SEED_PART = re.compile(r"^seed-\d+$")


def finished_runs(store: Path) -> list[Path]:
    """Run directories of `store` that finished, sorted."""
    runs = [p.parent for p in store.glob("*/seed-*/manifest.json")]
    runs += [
        p.parent
        for p in store.glob("*/seed-*/final_metrics.json")
        if not (p.parent / "manifest.json").exists()
    ]
    return sorted(set(runs))


def run_files(run_dir: Path) -> list[Path]:
    """What goes into the archive: every file but checkpoints/ and *.tmp."""
    return [
        p
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
        and p.relative_to(run_dir).parts[0] not in SKIPPED_DIRS
        and not p.name.endswith(".tmp")
    ]


def _tar_gz(runs: Sequence[Path], store: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=9) as tar:
        for run in runs:
            for path in run_files(run):
                info = tar.gettarinfo(path, arcname=f"runs/{path.relative_to(store).as_posix()}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with path.open("rb") as f:
                    tar.addfile(info, f)
    return out.getvalue()


def pack_runs(
    store: Path, out: Path, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES
) -> tuple[list[Path], list[str]]:
    """Pack the store's finished runs not packed before; returns (files written, notes).

    A run that alone exceeds `max_bytes` compressed is not packed (a note says so).
    """
    out.mkdir(parents=True, exist_ok=True)
    packed_list = store / PACKED
    packed = set(json.loads(packed_list.read_text())) if packed_list.is_file() else set()
    pending = [r for r in finished_runs(store) if r.relative_to(store).as_posix() not in packed]
    notes: list[str] = []
    sizes = {}
    for run in pending:
        sizes[run] = len(_tar_gz([run], store))
        if sizes[run] > max_bytes:
            notes.append(f"{run}: {sizes[run] / MiB:.1f} MiB compressed, over the file limit")
    groups: list[list[Path]] = []
    for run in (r for r in pending if sizes[r] <= max_bytes):
        if groups and sum(sizes[r] for r in groups[-1]) + sizes[run] <= max_bytes:
            groups[-1].append(run)
        else:
            groups.append([run])
    written: list[Path] = []
    while groups and len(written) < max_files:
        group = groups.pop(0)
        data = _tar_gz(group, store)
        if len(data) > max_bytes and len(group) > 1:  # the estimate missed: split
            groups[:0] = [group[:-1], group[-1:]]
            continue
        path = out / f"runs-{len(written):02d}.tar.gz"
        path.write_bytes(data)
        written.append(path)
        packed.update(r.relative_to(store).as_posix() for r in group)
        packed_list.write_text(json.dumps(sorted(packed), indent=1) + "\n")
    left = sum(len(g) for g in groups)
    if left:
        notes.append(f"{left} finished run(s) left for the next call (at most {max_files} files)")
    return written, notes


def _check_members(archive: Path, tar: tarfile.TarFile) -> None:
    for member in tar.getmembers():
        name = PurePosixPath(member.name)
        parts = name.parts
        bad = (
            name.is_absolute()
            or ".." in parts
            or not (member.isfile() or member.isdir())
            or (member.isfile() and len(parts) < 4)
            or parts[0] != "runs"
            or (len(parts) > 1 and not RUN_PART.match(parts[1]))
            or (len(parts) > 2 and not SEED_PART.match(parts[2]))
        )
        if bad:
            raise EnvGenError(
                f"{archive}: member {member.name!r} is not a file under runs/<run>/seed-<K>/ "
                "(absolute path, '..', link or device); nothing imported"
            )


def _verifier():
    """`envgen.store.verify_run` where the run store provides it, else None."""
    try:
        from envgen.store import verify_run
    except ImportError:
        return None
    return verify_run


def import_archives(archives: Sequence[Path], runs_root: Path) -> list[str]:
    """Unpack `archives` into `runs_root` (module docstring); returns one line per run.

    All or nothing: every archive is unpacked and every run in it verified before any
    run is moved into the store, so a damaged run or archive imports nothing and the
    store is never left with part of a call that the user was told failed.
    """
    verify = _verifier()
    for archive in archives:
        _check_archive_path(archive)
    _make_store(runs_root)
    lines = []
    with tempfile.TemporaryDirectory(dir=runs_root, prefix=".import-") as tmp:
        staged = [_stage(archive, Path(tmp, str(i)), verify) for i, archive in enumerate(archives)]
        for run, rel in (pair for runs in staged for pair in runs):
            lines.append(_move_in(run, rel, runs_root))
    return lines


def _check_archive_path(archive: Path) -> None:
    if not archive.is_file():
        problem = "is a directory" if archive.is_dir() else "no such file"
        raise EnvGenError(f"{archive}: {problem}; give runs-NN.tar.gz files; nothing imported")


def _make_store(runs_root: Path) -> None:
    if runs_root.exists() and not runs_root.is_dir():
        raise EnvGenError(
            f"{runs_root}: is a file; give the run store's directory with --runs-root; "
            "nothing imported"
        )
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvGenError(
            f"{runs_root}: cannot be the run store ({exc.strerror or exc}); give a directory "
            "with --runs-root; nothing imported"
        ) from None


def _stage(
    archive: Path, dest: Path, verify: Callable[[Path], object] | None
) -> list[tuple[Path, PurePosixPath]]:
    """Unpack `archive` into `dest` and verify each run; returns (run, runs/-relative path)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            _check_members(archive, tar)
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise EnvGenError(
            f"{archive}: not a whole runs-NN.tar.gz ({exc or type(exc).__name__}): damaged or "
            "truncated in transfer, fetch it again; nothing imported"
        ) from None
    except OSError as exc:
        raise EnvGenError(f"{archive}: cannot unpack ({exc}); nothing imported") from None
    runs = sorted(Path(dest, "runs").glob("*/seed-*"))
    for run in runs if verify is not None else ():
        try:
            verify(run)
        except EnvGenError as exc:
            raise EnvGenError(f"{exc} ({archive}; nothing imported)") from None
    return [(run, PurePosixPath(run.relative_to(Path(dest, "runs")).as_posix())) for run in runs]


def _move_in(run: Path, rel: PurePosixPath, runs_root: Path) -> str:
    target = runs_root / rel
    if target.exists():
        return f"{rel}: already in {runs_root}, kept as it is"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(run), str(target))
    return f"{rel}: imported"
