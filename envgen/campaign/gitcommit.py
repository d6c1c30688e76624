"""Commit one run directory to git, and nothing else.

A campaign commits each run as it finishes, so a killed session or another machine loses
at most the runs in flight. `git commit -- <dir>` commits only that path even with other
work staged; a finished run's checkpoints are never committed, a handed-off unfinished
run's latest one is (`commit_partial`). A busy index (`.git/index.lock`) is retried a few
times; any other failure is reported to the caller, which goes on training.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from envgen.store.manifest import CHECKPOINT_DIR, LATEST_CHECKPOINT  # torch-free
from envgen.store.run_dir import RunDir

LOCK_RETRIES = 5
LOCK_WAIT_S = 2.0


def is_committed(run_dir: Path, repo: Path = Path(".")) -> bool:
    """Whether `run_dir`'s final metrics are tracked and the directory has no changes."""
    tracked = _git(repo, "ls-files", "--error-unmatch", "--", str(RunDir(run_dir).final_metrics))
    if tracked.returncode != 0:
        return False
    no_checkpoints = f":(exclude){run_dir}/{CHECKPOINT_DIR}"  # git-ignored; never committed
    changes = _git(repo, "status", "--porcelain", "--", str(run_dir), no_checkpoints)
    return changes.stdout.strip() == ""


def commit_run(
    run_dir: Path,
    message: str,
    repo: Path = Path("."),
    wait_s: float = LOCK_WAIT_S,
    replies: Sequence[Path] = (),
) -> str:
    """Commit the finished `run_dir` (checkpoints excluded) with `message`, and in the
    same commit the LLM cache files `replies` its calls were served from (a run commits
    with what it needs to replay); returns "" or why it failed. Nothing to commit
    returns "" without a commit.

    A checkpoint that a handoff committed (`commit_partial`) leaves git with the finished
    run, and the working tree too: `git commit -- DIR` takes a tracked file's working-tree
    copy, so only its removal keeps it out. A finished run is never resumed.
    """

    def leave_checkpoints_out() -> subprocess.CompletedProcess[str] | None:
        # `add -- dir` skipped them where git ignores them; the reset unstages them
        # elsewhere (`add -- dir :(exclude)dir/checkpoints` is refused where it is ignored)
        _git(repo, "reset", "-q", "--", f"{run_dir}/{CHECKPOINT_DIR}")
        if _git(repo, "ls-files", "--", f"{run_dir}/{CHECKPOINT_DIR}").stdout.strip():
            return _git(repo, "rm", "-r", "-q", "-f", "--", f"{run_dir}/{CHECKPOINT_DIR}")
        return None

    return _commit(repo, [run_dir, *replies], message, leave_checkpoints_out, wait_s)


def commit_partial(
    run_dir: Path,
    message: str,
    repo: Path = Path("."),
    wait_s: float = LOCK_WAIT_S,
    replies: Sequence[Path] = (),
) -> str:
    """Commit the unfinished `run_dir` with its latest checkpoint (a handoff: another
    session or machine resumes it) and the LLM cache files `replies` its calls so far were
    served from, so that its resume replays them instead of asking a model again;
    returns "" or why it failed."""

    def add_checkpoint() -> subprocess.CompletedProcess[str]:
        return _git(repo, "add", "-f", "--", f"{run_dir}/{LATEST_CHECKPOINT}")

    return _commit(repo, [run_dir, *replies], message, add_checkpoint, wait_s)


def _commit(
    repo: Path,
    paths: Sequence[Path],
    message: str,
    then: Callable[[], subprocess.CompletedProcess[str] | None],
    wait_s: float,
) -> str:
    """Stage `paths`, then `then` (its result, if any, is the staging's), then commit
    `paths` alone; a busy index is retried."""
    names = [str(p) for p in paths]
    for attempt in range(LOCK_RETRIES + 1):
        added = _git(repo, "add", "--", *names)
        if added.returncode == 0:
            added = then() or added
        if added.returncode == 0:
            if _git(repo, "diff", "--cached", "--quiet", "--", *names).returncode == 0:
                return ""  # nothing new in these paths
            done = _git(repo, "commit", "--quiet", "-m", message, "--", *names)
            if done.returncode == 0:
                return ""
            error = done.stderr or done.stdout
        else:
            error = added.stderr
        if "index.lock" not in error or attempt == LOCK_RETRIES:
            return " ".join(error.split())[:300] or "git failed without a message"
        time.sleep(wait_s)
    return "unreachable"


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
