"""Committed evidence against the commit that added it: runs append-only, registrations
frozen above their "Deviations".

verify's other checks show that a run's files agree with each other (its manifest, its
re-derived final metrics); a forger who edits a run's logs, re-derives its metrics and
reseals it passes them all. What such an edit cannot keep is git's record: a sealed
run's manifest (the sha256 of every file of the run) is written once, when the run
finishes, and committed with it. So:

- **runs**: every committed manifest under results/ must still be the bytes of the
  commit that first added it, unless each later commit that changed it is a recorded
  change (results/run_changes.yaml: the commit, why, the runs it changed); an
  uncommitted edit is named too. Together with "each run's files match its manifest",
  a run's every byte is tied to the commit that added it.
- **registrations**: a campaign's registration (docs/campaign_*.md) fixes hypotheses,
  test and verdict words before its runs; the text above its "## Deviations" heading
  must be the text of its first commit, unless the Deviations section names (by its
  abbreviated hash) each later commit that changed it.

Both read git's history: a checkout without it (a shallow clone, an exported tree)
cannot be checked, and says so as a failure ("history needed").
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from envgen.errors import ConfigError, EnvGenError
from envgen.input_checks import read_yaml_mapping

RUN_CHANGES = Path("results/run_changes.yaml")
MANIFESTS = ":(glob)results/**/manifest.json"
DEVIATIONS = "## Deviations"
NEED_HISTORY = "history needed: git fetch --unshallow"


@dataclasses.dataclass(frozen=True)
class RunChange:
    """A commit that changed committed runs on purpose (a migration, a retrain)."""

    commit: str
    """Its hash (7 or more hex digits)."""
    why: str
    runs: tuple[str, ...]
    """The run directories it changed (repository-relative)."""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise EnvGenError(f"git {args[0]}: {done.stderr.strip().splitlines()[-1:] or ['failed']}")
    return done.stdout


def history_missing(repo: Path) -> str | None:
    """Why this checkout cannot show its history (not a git checkout, a shallow clone),
    or None."""
    try:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").strip()
    except EnvGenError:
        return f"not a git checkout; {NEED_HISTORY}"
    return NEED_HISTORY if shallow == "true" else None


def recorded_changes(repo: Path, path: Path = RUN_CHANGES) -> list[RunChange]:
    """The entries of results/run_changes.yaml (none when it does not exist)."""
    file = repo / path
    if not file.exists():
        return []
    data = read_yaml_mapping(file, "recorded changes of committed runs (`changes:` list)")
    changes = data.get("changes")
    if not isinstance(changes, list):
        raise ConfigError("changes", "a list of {commit, why, runs}", file=file)
    out = []
    for i, entry in enumerate(changes):
        where = f"changes[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"commit", "why", "runs"}:
            raise ConfigError(where, "needs exactly commit, why and runs", file=file)
        commit, why, runs = entry["commit"], entry["why"], entry["runs"]
        if not isinstance(commit, str) or len(commit) < 7 or not _is_hex(commit):
            raise ConfigError(f"{where}.commit", "a hash of at least 7 hex digits", file=file)
        if not isinstance(why, str) or not why.strip():
            raise ConfigError(f"{where}.why", "say why the runs changed", file=file)
        if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs) or not runs:
            raise ConfigError(f"{where}.runs", "a non-empty list of run directories", file=file)
        out.append(RunChange(commit, why, tuple(runs)))
    return out


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text.lower())


# --- runs ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Event:
    commit: str
    status: str
    """A (added), M (modified) or D (deleted)."""
    blob: str
    """The file's blob after the commit (zeros when deleted)."""


def manifest_events(repo: Path) -> dict[str, list[Event]]:
    """{manifest path: its commits, oldest first}, from one `git log --raw`."""
    out = _git(
        repo, "log", "--reverse", "--no-renames", "--raw", "--no-abbrev", "--format=C %H",
        "--", MANIFESTS,
    )  # fmt: skip
    events: dict[str, list[Event]] = {}
    commit = ""
    for line in out.splitlines():
        if line.startswith("C "):
            commit = line[2:].strip()
        elif line.startswith(":"):
            meta, _, path = line.partition("\t")
            fields = meta.split()
            if len(fields) >= 5 and path.endswith("/manifest.json"):
                events.setdefault(path, []).append(Event(commit, fields[4][0], fields[3]))
    return events


def _blob(data: bytes) -> str:
    """git's blob id of `data` (sha1 over its header and bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _recorded(changes: Sequence[RunChange], commit: str, run_dir: str) -> bool:
    return any(commit.startswith(c.commit) and run_dir in c.runs for c in changes)


def run_changes(repo: Path = Path(".")) -> tuple[list[str], int, int]:
    """(problems, committed manifests checked, manifests not yet committed): each sealed
    run's manifest against the one its first commit added."""
    events = manifest_events(repo)
    changes = recorded_changes(repo)
    problems: list[str] = []
    checked = uncommitted = 0
    for manifest in sorted((repo / "results").rglob("manifest.json")):
        rel = manifest.relative_to(repo).as_posix()
        run_dir = rel.rsplit("/", 1)[0]
        history = events.get(rel)
        if not history:
            uncommitted += 1
            continue
        checked += 1
        first = next((i for i, e in enumerate(history) if e.status == "A"), None)
        if first is None:
            problems.append(f"{run_dir}: its manifest has no adding commit in the history")
            continue
        for event in history[first + 1 :]:
            if event.status == "D":
                continue
            if not _recorded(changes, event.commit, run_dir):
                problems.append(
                    f"{run_dir}: its manifest changed in {event.commit[:10]} after the commit "
                    f"that added it ({history[first].commit[:10]}); no entry of {RUN_CHANGES} "
                    "names that change"
                )
                break
        else:
            if _blob(manifest.read_bytes()) != history[-1].blob:
                problems.append(
                    f"{run_dir}: its manifest differs from the committed one (uncommitted edit)"
                )
    return problems, checked, uncommitted


# --- registrations --------------------------------------------------------------------------
def above_deviations(text: str) -> str:
    """A registration's text above its "## Deviations" heading (all of it without one)."""
    head, _, _ = text.partition("\n" + DEVIATIONS)
    return head


def deviations(text: str) -> str:
    _, _, tail = text.partition("\n" + DEVIATIONS)
    return tail


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
    disclosed = deviations(now)
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


def frozen_registrations(documents: Iterable[str], repo: Path = Path(".")) -> list[str]:
    """The problem of each registration whose text above Deviations changed undisclosed."""
    return [p for p in (registration_changes(d, repo) for d in documents) if p is not None]
