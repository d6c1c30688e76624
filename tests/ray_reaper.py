"""Ray processes a test run starts end with it, SIGKILL of pytest included.

`ray.init()` starts its daemons (GCS, raylet, workers) detached from the process that
asked; a test run killed part-way (a capped `pytest`, Ctrl-C twice, `kill -9`) ran no
`ray.shutdown()` and left them running, and SIGTERM to the daemons did not stop them
all. So tests start Ray under a temporary directory of their own (`RAY_TMPDIR`) and
`reap_when_gone` starts a watcher (this module, run in its own session): when the test
process is gone (however it ended), the watcher SIGKILLs every process whose command
line names that directory (Ray's daemons all do) until none is left, then removes the
directory. The directory reaches the watcher through its environment, not its command
line, so that the watcher is not one of the processes it looks for.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REAP_VARIABLE = "ENVGEN_TEST_REAP_DIR"


def own_processes(temp_dir: str) -> list[int]:
    """Live PIDs of the Ray processes started under `temp_dir`, and their children.

    Zombies are left out: a killed daemon's exit status waits for whichever init
    process reaps it, which a container may do late or never.
    """
    table = [
        line.split(None, 3)
        for line in subprocess.check_output(
            ["ps", "-ww", "-eo", "pid=,ppid=,stat=,args="], text=True
        ).splitlines()
    ]
    live = [p for p in table if len(p) >= 3 and not p[2].startswith("Z")]
    own = {int(p[0]) for p in live if len(p) == 4 and temp_dir in p[3]}
    own |= {int(p[0]) for p in live if int(p[1]) in own}
    return sorted(own)


def kill_own_processes(temp_dir: str, timeout: float = 30.0) -> list[int]:
    """SIGKILL them until none is left (a dying raylet may still fork); returns survivors."""
    deadline = time.monotonic() + timeout
    while (left := own_processes(temp_dir)) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    return left


def reap_when_gone(temp_dir: str, parent: int) -> subprocess.Popen:
    """Start the watcher of `parent` (the test process) for Ray under `temp_dir`."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ray_reaper", str(parent)],
        env={**os.environ, "PYTHONPATH": str(REPO), REAP_VARIABLE: temp_dir},
        start_new_session=True,  # a signal to the test's process group spares it
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return False


if __name__ == "__main__":  # the watcher
    parent, temp = int(sys.argv[1]), os.environ[REAP_VARIABLE]
    while _alive(parent):
        time.sleep(0.5)
    kill_own_processes(temp)
    shutil.rmtree(temp, ignore_errors=True)
