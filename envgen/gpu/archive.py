"""Finished runs in and out of a machine that returns at most a few small files.

`pack_runs` puts a run store's sealed runs (manifest written: finished and checked) into
at most `max_files` `runs-NN.tar.gz` of at most `max_bytes` per call, each run whole: its
manifest and the files it lists. A run with final metrics but no manifest is unfinished
business of its machine and stays there. A list in the store remembers what was packed.

`import_archives` unpacks such files into a run store (results/runs). Every member must
be a plain file or directory under `runs/<run>/seed-<K>/`, within `MAX_MEMBER_BYTES` and,
an archive unpacked, `MAX_ARCHIVE_BYTES`; else the whole archive is refused, naming the
member. Each run must be the run its folder names (`envgen.loop.identity`) and match its
manifest (`envgen.store.verify_run`), else it alone is refused; only the manifest and its
files enter the store, and a run already there is kept. Printed names escape control
characters (a member's name comes from someone else).
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
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from envgen import json_input
from envgen.errors import EnvGenError
from envgen.loop.identity import check_identity
from envgen.store import verify_run
from envgen.store.manifest import MANIFEST, manifest_of
from envgen.store.run_dir import SEED_DIR, RunDir

MiB = 2**20
MAX_BYTES = 16 * MiB
MAX_FILES = 8
MAX_MEMBER_BYTES = 256 * MiB  # one file of a run, unpacked (a 1.96M-step run's: < 1 MiB)
MAX_ARCHIVE_BYTES = 1024 * MiB  # one archive, unpacked (16 MiB packed holds < 200 MiB)
REFUSED = "refused: "  # how a line of `import_archives` says a run was not imported
PACKED = ".gpu_packed.json"  # in the run store: runs already packed
RUN_PART = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]*$")


def _tar_gz(runs: Sequence[Path], store: Path) -> bytes:
    """The runs' manifests and the files they list, as a tar.gz."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=9) as tar:
        for run in runs:
            for path in [RunDir(run).manifest, *(run / rel for rel in sorted(manifest_of(run)))]:
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
    A run that alone exceeds `max_bytes` compressed is not packed (a note says so)."""
    out.mkdir(parents=True, exist_ok=True)
    packed_list = store / PACKED
    packed = set(json_input.read(packed_list)) if packed_list.is_file() else set()
    notes: list[str] = []
    pending = []
    for run in (run.root for run in RunDir.under(store) if run.finished):  # sealed, sorted
        if run.relative_to(store).as_posix() in packed:
            continue
        try:
            verify_run(run)
        except EnvGenError as exc:  # damaged here: left out, named, not marked as sent
            notes.append(f"{printable(str(exc))}; not packed")
            continue
        pending.append(run)
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
    total = 0
    for member in tar.getmembers():
        total += member.size
        if member.size > MAX_MEMBER_BYTES or total > MAX_ARCHIVE_BYTES:
            what = "member" if member.size > MAX_MEMBER_BYTES else "archive, unpacked,"
            limit = MAX_MEMBER_BYTES if member.size > MAX_MEMBER_BYTES else MAX_ARCHIVE_BYTES
            raise EnvGenError(
                f"{printable(archive)}: {what} over {limit // MiB} MiB at member "
                f"{printable(member.name)!r}; `gpu run` writes no such archive; nothing "
                "imported"
            )
        name = PurePosixPath(member.name)
        parts = name.parts
        bad = (
            name.is_absolute()
            or ".." in parts
            or not (member.isfile() or member.isdir())
            or (member.isfile() and len(parts) < 4)
            or parts[0] != "runs"
            or (len(parts) > 1 and not RUN_PART.match(parts[1]))
            or (len(parts) > 2 and not SEED_DIR.fullmatch(parts[2]))
        )
        if bad:
            raise EnvGenError(
                f"{printable(archive)}: member {printable(member.name)!r} is not a file under "
                "runs/<run>/seed-<K>/ (absolute path, '..', link or device); nothing imported"
            )


def import_archives(archives: Sequence[Path], runs_root: Path) -> list[str]:
    """Unpack `archives` into `runs_root` (module docstring); returns one line per run,
    `REFUSED` first on a run that was not imported and why. Every archive is checked
    before any run moves: one that `gpu run` did not write imports nothing of any."""
    for archive in archives:
        if not archive.is_file():
            problem = "is a directory" if archive.is_dir() else "no such file"
            raise EnvGenError(f"{archive}: {problem}; give runs-NN.tar.gz files; nothing imported")
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
    lines = []
    with tempfile.TemporaryDirectory(dir=runs_root, prefix=".import-") as tmp:
        staged = [_stage(archive, Path(tmp, str(i))) for i, archive in enumerate(archives)]
        for archive, runs in zip(archives, staged, strict=True):
            for run, rel in runs:
                lines.append(printable(_take_in(archive, run, rel, runs_root)))
    return lines


def printable(text: object) -> str:
    """`text` with every character that is not printable escaped (`\\x1b`, `\\n`):
    names from an archive must not drive the terminal."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(text)
    )


def _stage(archive: Path, dest: Path) -> list[tuple[Path, PurePosixPath]]:
    """Unpack `archive` into `dest`; returns (run, runs/-relative path) of each run."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            _check_members(archive, tar)
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise EnvGenError(
            f"{printable(archive)}: not a whole runs-NN.tar.gz ({exc or type(exc).__name__}): "
            "damaged or truncated in transfer, fetch it again; nothing imported"
        ) from None
    except OSError as exc:
        raise EnvGenError(
            f"{printable(archive)}: cannot unpack ({printable(exc)}); nothing imported"
        ) from None
    runs = [run.root for run in RunDir.under(Path(dest, "runs"))]
    return [(run, PurePosixPath(run.relative_to(Path(dest, "runs")).as_posix())) for run in runs]


def _take_in(archive: Path, run: Path, rel: PurePosixPath, runs_root: Path) -> str:
    """Check one staged run and copy its manifest and listed files into the store."""
    target = runs_root / rel
    if target.exists() or target.is_symlink():
        return f"{rel}: already in {runs_root}, kept as it is"
    try:
        verify_run(run)
        check_identity(run)
        listed = [MANIFEST, *sorted(manifest_of(run))]
    except EnvGenError as exc:
        where = str(exc).replace(f"{run.parent.parent}/", "")  # the staging folder
        return f"{REFUSED}{rel} ({archive}): {where}"
    building = target.with_name(f".{target.name}.importing")
    shutil.rmtree(building, ignore_errors=True)
    for name in listed:
        (building / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / name, building / name)
    building.rename(target)
    return f"{rel}: imported"
