"""Committed evidence in git's history, which a forger who edits a run's logs, re-derives
its metrics and reseals it cannot keep (docs/pipeline.md, "Verify"):

- **order**: a registration (docs/campaign_*.md) was first committed in an ancestor of,
  not the same as, the first commit of every run its campaign's runs.json lists
  (ancestry, not dates: a commit's date is whatever its author's clock said);
- **runs**: every committed manifest under results/ (the sha256 of each file of its
  run) and audit record is its first commit's bytes, unless results/run_changes.yaml
  records each later change; an uncommitted edit is named too;
- **registrations**: a registration's text above "## Deviations" is its first commit's,
  unless the Deviations name (by abbreviated hash) each commit that changed it.

Without the history these cannot be checked: a shallow clone fails them
(`HISTORY_NEEDED`: it is one fetch away); for an exported tree the order says why it is
unknown (`Order.unknown`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError, EnvGenError
from envgen.input_checks import read_yaml_mapping
from envgen.store.manifest import MANIFEST

HISTORY_NEEDED = "history needed: git fetch --unshallow"
"""What a shallow clone needs before `envgen verify` can check its history."""
RUN_CHANGES = Path("results/run_changes.yaml")
MANIFESTS = f":(glob)results/**/{MANIFEST}"
AUDIT_RECORDS = ":(glob)results/audit/**/*.json"
LLM_CACHE = "data/llm_cache"
DEVIATIONS = "## Deviations"


@dataclasses.dataclass(frozen=True)
class RunChange:
    """A commit that changed committed runs on purpose (a migration, a retrain)."""

    commit: str
    """Its hash (7 or more hex digits)."""
    why: str
    paths: tuple[str, ...]
    """The run directories and files it changed (repository-relative)."""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """`git -C repo ARGS`, its output captured as text."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60
    )


def _git(repo: Path, *args: str) -> str:
    """The output of `git -C repo ARGS`; a failure is an `EnvGenError` with git's last line."""
    done = git(repo, *args)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise EnvGenError(f"git {args[0]}: {lines[-1] if lines else 'failed'}")
    return done.stdout


def history_missing(repo: Path) -> str | None:
    """Why this checkout cannot show its history (not a git checkout, a shallow clone),
    or None."""
    try:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").strip()
    except EnvGenError:
        return f"not a git checkout; {HISTORY_NEEDED}"
    return HISTORY_NEEDED if shallow == "true" else None


def recorded_changes(repo: Path, path: Path = RUN_CHANGES) -> list[RunChange]:
    """The entries of results/run_changes.yaml (none when it does not exist)."""
    file = repo / path
    if not file.exists():
        return []
    data = read_yaml_mapping(file, "recorded changes of committed runs (`changes:` list)")
    changes = data.get("changes")
    if not isinstance(changes, list):
        raise ConfigError("changes", "a list of {commit, why, paths}", file=file)
    out = []
    for i, entry in enumerate(changes):
        where = f"changes[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"commit", "why", "paths"}:
            raise ConfigError(where, "needs exactly commit, why and paths", file=file)
        commit, why, paths = entry["commit"], entry["why"], entry["paths"]
        if not isinstance(commit, str) or not re.fullmatch("[0-9a-fA-F]{7,}", commit):
            raise ConfigError(f"{where}.commit", "a hash of at least 7 hex digits", file=file)
        if not isinstance(why, str) or not why.strip():
            raise ConfigError(f"{where}.why", "say why the runs changed", file=file)
        if not isinstance(paths, list) or not all(isinstance(r, str) for r in paths) or not paths:
            raise ConfigError(
                f"{where}.paths", "a non-empty list of run directories and files", file=file
            )
        out.append(RunChange(commit, why, tuple(paths)))
    return out


# --- order -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Order:
    """What the history shows: `problem` (the first run not preceded), or `unknown` (why
    the history cannot tell), or neither (every run comes after its registration)."""

    registration: str
    """The registration's first commit, abbreviated ("" when unknown)."""
    runs: int
    """Run directories checked."""
    problem: str | None = None
    unknown: str | None = None
    shallow: bool = False
    """A shallow clone: the history that would tell is a fetch away (`HISTORY_NEEDED`)."""


def first_commit(repo: Path, path: str) -> str | None:
    """The oldest commit that touched `path` (a file or folder), or None if none did."""
    done = git(repo, "log", "--reverse", "--format=%H", "--", path)
    lines = done.stdout.split() if done.returncode == 0 else []
    return lines[0] if lines else None


def registration_order(repo: Path, document: str, run_dirs: Sequence[str]) -> Order:
    """Whether `document` (repo-relative) was committed before each of `run_dirs`."""
    inside = git(repo, "rev-parse", "--is-shallow-repository")
    if inside.returncode != 0:
        return Order("", 0, unknown="not a git checkout: the order of commits is not here")
    if inside.stdout.strip() == "true":
        why = "a shallow clone: `git fetch --unshallow` brings the history to check"
        return Order("", 0, unknown=why, shallow=True)
    registered = first_commit(repo, document)
    if registered is None:
        return Order("", 0, problem=f"{document} is in no commit")
    for count, run_dir in enumerate(run_dirs):
        first = first_commit(repo, run_dir)
        if first is None:
            return Order(registered[:7], count, problem=f"{run_dir} is in no commit; commit it")
        before = git(repo, "merge-base", "--is-ancestor", registered, first).returncode == 0
        if first == registered or not before:
            problem = (
                f"{run_dir} was first committed in {first[:7]}, which does not come after "
                f"{document}'s first commit {registered[:7]}"
            )
            return Order(registered[:7], count, problem=problem)
    return Order(registered[:7], len(run_dirs))


# --- runs ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Event:
    commit: str
    status: str
    """A (added), M (modified) or D (deleted)."""
    blob: str
    """The file's blob after the commit (zeros when deleted)."""


def file_events(repo: Path, pathspec: str) -> dict[str, list[Event]]:
    """{path: its commits, oldest first} of the files `pathspec` matches, from one
    `git log --raw`."""
    out = _git(
        repo, "log", "--reverse", "--no-renames", "--raw", "--no-abbrev", "--format=C %H",
        "--", pathspec,
    )  # fmt: skip
    events: dict[str, list[Event]] = {}
    commit = ""
    for line in out.splitlines():
        if line.startswith("C "):
            commit = line[2:].strip()
        elif line.startswith(":"):
            meta, _, path = line.partition("\t")
            fields = meta.split()
            if len(fields) >= 5:
                events.setdefault(path, []).append(Event(commit, fields[4][0], fields[3]))
    return events


def _blob(data: bytes) -> str:
    """git's blob id of `data` (sha1 over its header and bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _recorded(changes: Sequence[RunChange], commit: str, path: str) -> bool:
    return any(commit.startswith(c.commit) and path in c.paths for c in changes)


def _as_added(
    path: str, history: Sequence[Event], changes: Sequence[RunChange], owner: str
) -> str | None:
    """Why the committed history of `path` breaks "as added": a later commit changed it
    and no recorded change names `owner` (its run directory, or the file) for it."""
    first = next((i for i, e in enumerate(history) if e.status == "A"), None)
    if first is None:
        return f"{owner}: no adding commit in the history"
    for event in history[first + 1 :]:
        if event.status != "D" and not _recorded(changes, event.commit, owner):
            return (
                f"{owner}: {'its manifest' if owner != path else 'it'} changed in "
                f"{event.commit[:10]} after the commit that added it "
                f"({history[first].commit[:10]}); no entry of {RUN_CHANGES} names that change"
            )
    return None


def run_changes(repo: Path = Path(".")) -> tuple[list[str], int, int]:
    """(problems, committed files checked, files not yet committed): each sealed run's
    manifest (so every file of the run) and each audit record under results/audit
    against the bytes the commit that first added it wrote, but for recorded changes."""
    changes = recorded_changes(repo)
    events = {**file_events(repo, MANIFESTS), **file_events(repo, AUDIT_RECORDS)}
    manifests = sorted((repo / "results").rglob(MANIFEST))
    sealed = {m.parent for m in manifests}
    records = [
        p
        for p in sorted((repo / "results" / "audit").rglob("*.json"))
        if not any(parent in sealed for parent in p.parents)
    ]
    problems: list[str] = []
    checked = uncommitted = 0
    for file in [*manifests, *records]:
        rel = file.relative_to(repo).as_posix()
        owner = rel.rsplit("/", 1)[0] if file.name == MANIFEST else rel
        history = events.get(rel)
        if not history:
            uncommitted += 1
            continue
        checked += 1
        problem = _as_added(rel, history, changes, owner)
        if problem is None and _blob(file.read_bytes()) != history[-1].blob:
            problem = f"{owner}: differs from its committed bytes (an uncommitted edit)"
        if problem:
            problems.append(problem)
    return problems, checked, uncommitted


def _blobs(repo: Path, ids: Sequence[str]) -> dict[str, bytes]:
    """{blob id: its bytes}, through one `git cat-file --batch`."""
    done = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input="".join(f"{i}\n" for i in ids).encode(),
        capture_output=True,
        timeout=120,
    )
    out, found, at = done.stdout, {}, 0
    for blob in ids:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if len(header) < 3:  # "<id> missing"
            at = header_end + 1
            continue
        size = int(header[2])
        found[blob] = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return found


def _reply(data: bytes) -> dict[str, Any] | None:
    """A cache file's fields but its slots; None if it is not a JSON object."""
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    record.pop("slots", None)
    return record


def cache_changes(repo: Path = Path("."), cache: str = LLM_CACHE) -> tuple[list[str], int]:
    """(problems, committed replies checked): each cached LLM reply, request and
    recording record as the commit that first added it wrote them; only its protocol
    slots may change (a run that replays the request files its slot; a retrained run's
    old slot is dropped), and `envgen verify`'s "LLM slots" line checks those."""
    events = file_events(repo, f":(glob){cache}/*.json")
    changes = recorded_changes(repo)
    added = {
        path: next((e for e in history if e.status == "A"), None)
        for path, history in events.items()
    }
    originals = _blobs(repo, [e.blob for e in added.values() if e is not None])
    problems: list[str] = []
    checked = 0
    for file in sorted((repo / cache).glob("*.json")):
        rel = file.relative_to(repo).as_posix()
        first = added.get(rel)
        if first is None:
            continue  # not committed yet: a recording in progress
        checked += 1
        then, now = _reply(originals.get(first.blob, b"")), _reply(file.read_bytes())
        if then is None or now is None:
            problems.append(f"{rel}: not a JSON reply record (now or when added)")
        elif then != now and not any(
            _recorded(changes, e.commit, rel) for e in events[rel] if e is not first
        ):
            key = next(k for k in sorted(set(then) | set(now)) if then.get(k) != now.get(k))
            problems.append(
                f"{rel}: its {key!r} differs from the commit that added it "
                f"({first.commit[:10]}); only its slots may change"
            )
    return problems, checked


# --- registrations --------------------------------------------------------------------------
def above_deviations(text: str) -> str:
    """A registration's text above its "## Deviations" heading (all of it without one)."""
    head, _, _ = text.partition("\n" + DEVIATIONS)
    return head


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return f"line {i}: {x.strip()[:60]!r} became {y.strip()[:60]!r}"
    return "lines added or removed at the end"


def registration_changes(document: str, repo: Path = Path(".")) -> str | None:
    """The first undisclosed change to `document` above its Deviations since its first
    commit, as one line; None when it is frozen (or each change is named there)."""
    commits = _git(repo, "log", "--reverse", "--format=%H", "--", document).split()
    if not commits:
        return f"{document} is in no commit"
    path = repo / document
    if not path.is_file():
        return f"{document} is missing from the checkout"
    now = path.read_text(encoding="utf-8")
    disclosed = now.partition("\n" + DEVIATIONS)[2]  # the Deviations section
    previous = above_deviations(_git(repo, "show", f"{commits[0]}:{document}"))
    for commit in commits[1:]:
        text = above_deviations(_git(repo, "show", f"{commit}:{document}"))
        if text != previous and commit[:7] not in disclosed:
            return (
                f"{document}: its text above Deviations changed in {commit[:10]} "
                f"({_first_difference(previous, text)}), which its Deviations do not name"
            )
        previous = text
    if above_deviations(now) != previous:
        return (
            f"{document}: uncommitted change above Deviations "
            f"({_first_difference(previous, above_deviations(now))})"
        )
    return None
