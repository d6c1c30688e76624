"""Ray processes a test run starts end with it, SIGKILL of pytest included.

`ray.init()` starts its daemons (GCS, raylet, workers) detached from the process that
asked; a test run killed part-way (a capped `pytest`, Ctrl-C twice, `kill -9`) ran no
`ray.shutdown()` and left them running, and SIGTERM to the daemons did not stop them
all. So tests start Ray under a temporary directory of their own (`RAY_TMPDIR`) and
`reap_when_gone` starts a watcher in its own session: when the test process is gone
(however it ended), the watcher SIGKILLs every process whose command line names that
directory (Ray's daemons all do) until none is left, then removes the directory.
"""

from __future__ import annotations

import subprocess
import sys

WATCH = r"""
import os, shutil, signal, sys, time

parent, temp, me = int(sys.argv[1]), sys.argv[2], os.getpid()


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return False


def ray_processes():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if temp.encode() in f.read() and alive(int(name)):
                        found.append(int(name))
            except OSError:
                pass
    return found


while alive(parent):
    time.sleep(0.5)
for _ in range(150):  # a dying raylet may still fork: until none is left, 30 s at most
    left = ray_processes()
    if not left:
        break
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
shutil.rmtree(temp, ignore_errors=True)
"""


def reap_when_gone(temp_dir: str, parent: int) -> subprocess.Popen:
    """Start the watcher of `parent` (the test process) for Ray under `temp_dir`."""
    return subprocess.Popen(
        [sys.executable, "-c", WATCH, str(parent), temp_dir],
        start_new_session=True,  # a signal to the test's process group spares it
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
