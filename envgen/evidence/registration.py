"""A registered campaign's order in git: its registration before every one of its runs.

A registration (docs/campaign_*.md) fixes the test before the data exist, and the report
says so. That is a fact about the repository's history, so it is re-derived from there:
the commit that added the registration must be an ancestor of, and not the same as, the
first commit of every run directory the campaign's runs.json lists. Ancestry, not
dates: a commit's date is whatever its author's clock said.

Without the history (an exported tree) the answer says why (`Order.unknown`) instead of
passing or failing; a shallow clone is one fetch from it (`HISTORY_NEEDED`), so `envgen
verify` fails there (`Order.shallow`) rather than pass a check it never made.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Sequence
from pathlib import Path


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


HISTORY_NEEDED = "history needed: git fetch --unshallow"
"""What a shallow clone needs before `envgen verify` can check a registration's order."""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """`git -C repo ARGS`, its output captured as text (`envgen.evidence.history` too)."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60
    )


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
        return Order(
            "",
            0,
            unknown="a shallow clone: `git fetch --unshallow` brings the history to check",
            shallow=True,
        )
    registered = first_commit(repo, document)
    if registered is None:
        return Order("", 0, problem=f"{document} is in no commit")
    for count, run_dir in enumerate(run_dirs):
        first = first_commit(repo, run_dir)
        if first is None:
            return Order(registered[:7], count, problem=f"{run_dir} is in no commit; commit it")
        before = git(repo, "merge-base", "--is-ancestor", registered, first).returncode == 0
        if first == registered or not before:
            return Order(
                registered[:7],
                count,
                problem=f"{run_dir} was first committed in {first[:7]}, which does not come "
                f"after {document}'s first commit {registered[:7]}",
            )
    return Order(registered[:7], len(run_dirs))
