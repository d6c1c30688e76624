"""One campaign process at a time, and a stop that ends all of it.

The campaign process holds an exclusive `flock` on the campaign's lock file while it
lives. `start` takes it before planning and hands the open file to the process it
launches (`--lock-fd`), so a second `start` is refused meanwhile; the pid file only names
the holder and its worker count. The process leads its own group, where its workers stay:
`stop` signals the group and waits for every member to end. A foreground campaign ends
its group on Ctrl-C or SIGTERM, and its workers end when it dies (`envgen.lifetime`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import multiprocessing
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from envgen.campaign.registry import PROCESS_MARK, STATE_DIR, Campaign
from envgen.errors import EnvGenError

LOCK_TRIES = 5  # a `status` probing the lock holds it for an instant: retry past that
LOCK_RETRY_S = 0.05
PID_WAIT_S = 2.0  # a process that has just taken the lock writes its pid file next


@dataclasses.dataclass(frozen=True)
class Process:
    """What the pid file says."""

    pid: int
    workers: int


def read_process(c: Campaign) -> Process | None:
    """The recorded campaign process, or None without a (readable) pid file."""
    try:
        lines = c.pid_file.read_text(encoding="utf-8").split()
        return Process(int(lines[0]), int(lines[1]) if len(lines) > 1 else 0)
    except (OSError, ValueError, IndexError):
        return None


def write_process(c: Campaign, process: Process) -> None:
    """Record the lock holder (called by the holder, with the lock held)."""
    c.pid_file.write_text(f"{process.pid}\n{process.workers}\n", encoding="utf-8")


def is_alive(pid: int) -> bool:
    """A live, non-zombie process whose command line is a campaign's (pids get reused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc: trust the signal
    try:
        if ") Z" in (proc / "stat").read_text():
            return False
        return PROCESS_MARK.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


# --- the lock ----------------------------------------------------------------------------
def acquire(c: Campaign) -> int:
    """An open file descriptor holding `c`'s lock; an `EnvGenError` while another holds it."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(c.lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    for attempt in range(LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if attempt + 1 < LOCK_TRIES:
                time.sleep(LOCK_RETRY_S)
    os.close(fd)
    holder = read_process(c)
    pid = f"pid {holder.pid}" if holder else "pid not yet recorded"
    raise EnvGenError(
        f"campaign {c.name} is already running ({pid}, log {c.log}); see "
        f"`envgen campaign status {c.name}`, or `envgen campaign stop {c.name}`"
    )


def adopt(c: Campaign, fd: int) -> int:
    """`fd`, the lock `start` handed over, checked to hold `c`'s lock, kept from children."""
    try:
        same = os.fstat(fd).st_ino == os.stat(c.lock_file).st_ino
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the holder's own open file: granted
    except OSError as exc:
        raise EnvGenError(f"--lock-fd {fd}: not the lock of campaign {c.name} ({exc})") from exc
    if not same:
        raise EnvGenError(f"--lock-fd {fd}: not {c.lock_file}")
    os.set_inheritable(fd, False)
    return fd


def is_locked(c: Campaign) -> bool:
    """Whether a live process holds `c`'s lock."""
    try:
        fd = os.open(c.lock_file, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's shared lock


def live_process(c: Campaign) -> Process | None:
    """The process holding `c`'s lock, or None when none does."""
    if not is_locked(c):
        return None
    deadline = time.monotonic() + PID_WAIT_S
    while True:
        process = read_process(c)
        if process is not None and is_alive(process.pid):
            return process
        if time.monotonic() > deadline or not is_locked(c):
            break
        time.sleep(0.1)
    if not is_locked(c):
        return None
    raise EnvGenError(
        f"campaign {c.name}: a process holds {c.lock_file} but {c.pid_file} does not name "
        f"it; `fuser {c.lock_file}` shows which"
    )


# --- launch, signals, stop ---------------------------------------------------------------
def launch(c: Campaign, command: Sequence[str], lock_fd: int, workers: int) -> int:
    """Start `command` detached (its own session and process group) with `lock_fd` and
    the campaign's variables (`Campaign.environment`); record it in the pid file; returns
    its pid. The caller closes `lock_fd`."""
    with c.log.open("a", encoding="utf-8") as log:
        process = subprocess.Popen(
            [*command, "--lock-fd", str(lock_fd)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(lock_fd,),
            env={**os.environ, "PYTHONUNBUFFERED": "1", **c.environment()},
        )
    write_process(c, Process(process.pid, workers))
    return process.pid


def end_group_on_signal() -> None:
    """On Ctrl-C (SIGINT) or SIGTERM, end this process's workers, then exit: a process
    that leads its group signals the whole group, grandchildren included; one that does
    not (run from a script) ends its own workers and leaves the caller's group alone."""

    def handler(signum: int, _frame: object) -> None:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGTERM)
        else:
            for child in multiprocessing.active_children():
                child.terminate()
        raise SystemExit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, handler)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group `pgid`, from /proc."""
    members = []
    for entry in Path("/proc").glob("[0-9]*"):  # the processes' folders
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # state, ppid, pgrp, ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _left(pid: int) -> bool:
    """Whether process `pid` or any member of the group it leads is still alive."""
    if is_alive(pid):
        return True
    if Path("/proc/self/stat").is_file():
        return bool(group_members(pid))
    try:
        os.killpg(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _signal(pid: int, signum: int) -> None:
    """Signal the group `pid` leads (a started campaign: its workers too) and `pid` (one
    run from a script leads no group; it ends its own workers, `end_group_on_signal`)."""
    for send in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError):
            send(pid, signum)


def _wait(pid: int, wait_s: float) -> bool:
    """Whether `pid` and its group ended within `wait_s`."""
    deadline = time.monotonic() + wait_s
    while _left(pid) and time.monotonic() <= deadline:
        time.sleep(0.2)
    return not _left(pid)


def stop(c: Campaign, wait_s: float = 15.0) -> int:
    """SIGTERM the campaign's process group (its workers too) and wait until every member
    has ended; one still there after `wait_s` gets SIGKILL. The run in flight resumes
    from its last checkpoint on the next `start`. (The pid file's second line is the
    worker count, so `kill -- -$(cat pidfile)` would signal pid 1 too.)"""
    running = live_process(c)
    if running is None:
        print(f"campaign {c.name}: not running")
        return 0
    _signal(running.pid, signal.SIGTERM)
    forced = not _wait(running.pid, wait_s)
    if forced:
        _signal(running.pid, signal.SIGKILL)
        if not _wait(running.pid, 5.0):
            raise EnvGenError(
                f"campaign {c.name} (pid {running.pid}) did not end after SIGKILL: processes "
                f"{', '.join(map(str, group_members(running.pid)))} remain"
            )
    c.pid_file.unlink(missing_ok=True)
    how = f"killed (SIGKILL after {wait_s:.0f} s)" if forced else "stopped"
    print(
        f"campaign {c.name}: {how} pid {running.pid} and its workers; `envgen campaign start "
        f"{c.name}` continues (the run in flight resumes from its last checkpoint)"
    )
    return 0
