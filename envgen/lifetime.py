"""Worker processes that end with their parent: no orphan trains on after a kill.

A parent killed by a signal runs no clean-up. On Linux `die_with_parent`, called first in
a worker, has the kernel kill the worker when its parent ends (at once if it already has);
`bound_to_parent` does the same for a program that is not Python (the local LLM server)
through a tiny launcher, whose request survives `exec`. `signals_exit` turns SIGTERM
(which skips `finally` blocks) and SIGINT (which leaves a process pool's `with` waiting
for its jobs) into an orderly exit while a resource is held.
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


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel kill this process when its parent ends (Linux only), and kill it
    now if `parent`, the pid that started it, is no longer its parent."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if parent is not None and os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


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


def bound_to_parent(command: Sequence[str]) -> list[str]:
    """`command` started so that the kernel kills it when the thread that starts it (with
    `subprocess.Popen`) ends; elsewhere than on Linux the launcher just execs it."""
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), str(int(signal.SIGKILL)), *command]


@contextlib.contextmanager
def signals_exit(cleanup: Callable[[], None]) -> Iterator[None]:
    """While inside: SIGTERM or SIGINT ends this process's multiprocessing children, calls
    `cleanup` and raises `SystemExit(128 + SIGTERM)` or `KeyboardInterrupt`, so that
    `finally` blocks run without waiting for the children. Only in the main thread and for
    a signal with Python's default handling (a campaign's own handler is left as it is);
    the defaults come back on leaving; a forked child gets the default action."""
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
