"""Worker processes that end with their parent: no orphan trains on after a kill.

A parent killed by a signal (`kill PID`, `kill -9`, an out-of-memory kill) runs no
clean-up, so its workers would go on training and writing into the run store (an
orphaned worker once re-sealed a run after it had been restored from git). Linux ends
them for us: `PR_SET_PDEATHSIG` asks the kernel to signal a process when the thread that
created it ends. Each worker calls `die_with_parent` first thing, giving the pid it
expects as its parent: if that parent is already gone (it died between the fork and the
call), the worker ends at once. Elsewhere (macOS) nothing is set and the function says so.

A program that is not Python (the local LLM server, once exec'd) cannot call it, so
`bound_to_parent` wraps its command line in a tiny launcher that sets the same request
and then execs the program: the request survives `exec`, the pid stays the same.

A SIGTERM by default ends Python without running `finally` blocks or context managers
(a server's `stop`, a temporary directory's removal), and a SIGINT sent to the parent
alone leaves a process pool's `with` waiting for its jobs. `signals_exit` turns both
into an orderly exit while a resource is held: it ends this process's multiprocessing
children, runs the given clean-up and raises `SystemExit(143)` or `KeyboardInterrupt`.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int | None = None, signum: int = signal.SIGKILL) -> bool:
    """Have the kernel send `signum` to this process when its parent ends; whether it could.

    `parent`: the pid this process was started by; when the process's parent is no
    longer that one, the parent has already ended and this process ends now.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signum)
    return True


# argv: parent pid, signal number, the command; the same request as `die_with_parent`,
# standard library only (no envgen import in the child), then exec.
_LAUNCHER = """\
import ctypes, os, sys
parent, signum, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
if sys.platform.startswith("linux"):
    if ctypes.CDLL(None, use_errno=True).prctl(1, signum, 0, 0, 0) != 0:
        sys.exit("envgen.lifetime: prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        sys.exit("envgen.lifetime: the parent ended before the program started")
os.execvp(command[0], command)
"""


def bound_to_parent(command: Sequence[str], signum: int = signal.SIGKILL) -> list[str]:
    """`command` started so that the kernel sends it `signum` when the thread that starts
    it (with `subprocess.Popen`) ends: a killed parent leaves no orphan. On Linux only;
    elsewhere the launcher just execs `command`."""
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), str(int(signum)), *command]


@contextlib.contextmanager
def signals_exit(cleanup: Callable[[], None]) -> Iterator[None]:
    """While inside: SIGTERM or SIGINT ends this process's multiprocessing children,
    calls `cleanup` and raises `SystemExit(128 + SIGTERM)` or `KeyboardInterrupt` in the
    main thread, so `finally` blocks and context managers run without waiting for the
    children's work (a process pool's `with` waits for its running jobs).

    Only for a signal with Python's default handling and in the main thread (a handler
    can only be set there): a handler already set (a campaign's `end_group_on_signal`)
    is left as it is. The defaults come back on leaving. A forked child that inherited a
    handler gets the default action instead.
    """
    owner = os.getpid()
    defaults = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}
    main = threading.current_thread() is threading.main_thread()
    mine = [s for s, default in defaults.items() if main and signal.getsignal(s) is default]

    def handler(signum: int, _frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signum, defaults[signum])
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)
            return
        for s in mine:
            signal.signal(s, signal.SIG_IGN)  # one orderly exit, not a second one inside it
        for child in multiprocessing.active_children():
            child.terminate()
        cleanup()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    for s in mine:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s in mine:
            if signal.getsignal(s) in (handler, signal.SIG_IGN):
                signal.signal(s, defaults[s])
