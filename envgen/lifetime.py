"""Worker processes that end with their parent: no orphan trains on after a kill.

A parent killed by a signal (`kill PID`, `kill -9`, an out-of-memory kill) runs no
clean-up, so its workers would go on training and writing into the run store (an
orphaned worker once re-sealed a run after it had been restored from git). Linux ends
them for us: `PR_SET_PDEATHSIG` asks the kernel to signal a process when the thread that
created it ends. Each worker calls `die_with_parent` first thing, giving the pid it
expects as its parent: if that parent is already gone (it died between the fork and the
call), the worker ends at once. Elsewhere (macOS) nothing is set and the function says so.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

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
