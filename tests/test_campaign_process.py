"""One campaign process at a time, a stop that ends its whole group, no orphaned worker.

Each test starts real processes: a campaign holding its lock (through
`envgen.campaign.process` itself), a process group with a grandchild, the executor's
worker pool, a vector env's workers; then kills or stops the parent and looks for
every child in /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envgen.campaign import cli, process, run
from envgen.campaign.registry import PROCESS_MARK, STATE_DIR, campaigns
from envgen.errors import EnvGenError

REPO = Path(__file__).resolve().parents[1]
CPU = campaigns()["cpu"]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

# A campaign process as `run` is: takes the lock, records itself, starts a worker whose
# own child is a grandchild of the campaign, then waits. argv[1] is the campaign mark.
HOLDER = """
import subprocess, sys, time
from envgen.campaign import process
from envgen.campaign.registry import campaigns
c = campaigns()["cpu"]
fd = process.acquire(c)
process.write_process(c, process.Process(__import__("os").getpid(), 2))
sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
worker = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(120)", *sleep])
print(worker.pid, flush=True)
time.sleep(120)
"""

# A stage or campaign with two pool workers busy for 2 minutes; prints their pids.
POOL = """
import os, sys, time
from envgen.pipeline.executor import worker_pool
{signals}
pool = worker_pool(2)
futures = [pool.submit(time.sleep, 120) for _ in range(2)]
while len(pool._processes) < 2:
    time.sleep(0.05)
print(*pool._processes, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    """A live, non-zombie process."""
    try:
        return ") Z" not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


def wait_gone(pids: list[int], within_s: float) -> list[int]:
    """The pids of `pids` still alive after `within_s`."""
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def children_of(pids: list[int]) -> list[int]:
    """Every live descendant of `pids`, from /proc."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            parent[int(entry.name)] = int(fields[1])
    found, frontier = [], list(pids)
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        found += kids
        frontier = kids
    return found


@pytest.fixture
def holder(tmp_path, monkeypatch):
    """A campaign process in its own session, holding cpu's lock, with a worker and a
    grandchild; yields (process, worker pid)."""
    monkeypatch.chdir(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, PROCESS_MARK],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    worker = int(proc.stdout.readline())
    deadline = time.monotonic() + 60
    while process.live_process(CPU) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield proc, worker
    finally:
        with_group = [proc.pid, *children_of([proc.pid])]
        for pid in with_group:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def test_a_second_campaign_process_is_refused_while_the_first_holds_the_lock(holder, capsys):
    proc, _ = holder
    assert process.live_process(CPU) == process.Process(proc.pid, 2)
    with pytest.raises(EnvGenError, match=f"already running \\(pid {proc.pid}"):
        run.start(CPU, REPO / "params.yaml", Path("runs"), None, False)
    with pytest.raises(EnvGenError, match="already running"):  # in the foreground too
        run.run(CPU, REPO / "params.yaml", Path("runs"), None, False)
    assert cli.main(["start", "cpu"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"pid {proc.pid}" in line and "envgen campaign stop cpu" in line
    proc.kill()
    proc.wait()
    assert process.live_process(CPU) is None  # the kernel dropped its lock
    os.close(process.acquire(CPU))  # free for the next start


def test_a_start_typed_in_a_subdirectory_meets_the_live_campaign_at_the_root(
    holder, tmp_path, monkeypatch, capsys
):
    """The lock and every default path are the repository root's: a second start typed
    in results/ says "already running", rather than taking a lock of its own there and
    failing on a file it looks for beside it."""
    proc, _ = holder
    (tmp_path / CPU.table).parent.mkdir(parents=True)
    (tmp_path / CPU.table).write_text((REPO / CPU.table).read_text())  # its declaration
    (tmp_path / "results").mkdir()
    monkeypatch.chdir(tmp_path / "results")
    assert cli.main(["start", "cpu"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"already running (pid {proc.pid}" in line
    assert not (tmp_path / "results" / STATE_DIR).exists()
    assert Path.cwd() == tmp_path  # the command moved to the root


def test_paths_typed_stay_relative_to_the_root_so_run_dirs_in_runs_json_stay_relative(
    tmp_path, monkeypatch
):
    """DVC's `collect` passes --params params.yaml --runs-root results/runs from the root:
    they must stay as typed (runs.json records run directories under --runs-root)."""
    (tmp_path / CPU.table).parent.mkdir(parents=True)
    (tmp_path / CPU.table).write_text("rows: []\n")
    (tmp_path / "results").mkdir()

    def paths(cwd: Path, *argv: str) -> tuple[Path, Path, Path | None]:
        monkeypatch.chdir(cwd)
        args = cli.OneLineParser(prog="t")
        cli.add_commands(args)
        ns = args.parse_args(["collect", "cpu", *argv])
        cli.at_repository_root(CPU, ns)
        return ns.params, ns.runs_root, ns.out

    typed = ("--params", "params.yaml", "--runs-root", "results/runs")
    assert paths(tmp_path, *typed) == (Path("params.yaml"), Path("results/runs"), None)
    assert Path.cwd() == tmp_path
    assert paths(tmp_path / "results", "--runs-root", "runs", "--out", "x.json") == (
        Path("params.yaml"),
        Path("results/runs"),
        Path("results/x.json"),
    )
    assert Path.cwd() == tmp_path


def test_a_pid_file_without_the_lock_is_no_campaign(tmp_path, monkeypatch):
    """A live process with the campaign mark, named by the pid file, but holding no lock
    (a stale pid file whose pid came back as another campaign-looking process)."""
    monkeypatch.chdir(tmp_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", PROCESS_MARK])
    try:
        STATE_DIR.mkdir(parents=True)
        CPU.pid_file.write_text(f"{sleeper.pid}\n2\n")
        deadline = time.monotonic() + 60  # on a loaded machine the exec may lag
        while not process.is_alive(sleeper.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.is_alive(sleeper.pid) and process.live_process(CPU) is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_lock_is_one_holder_at_a_time_and_handed_over_only_as_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fd = process.acquire(CPU)
    try:
        with pytest.raises(EnvGenError, match="already running"):
            process.acquire(CPU)
        assert process.adopt(CPU, fd) == fd  # what `start` hands to `run`
        other = os.open(tmp_path / "other", os.O_RDWR | os.O_CREAT)
        with pytest.raises(EnvGenError, match="--lock-fd"):
            process.adopt(CPU, other)
        os.close(other)
    finally:
        os.close(fd)
    os.close(process.acquire(CPU))


def test_stop_ends_the_whole_process_group_grandchildren_too(holder, capsys):
    proc, worker = holder
    deadline = time.monotonic() + 60  # the worker starts its child
    while len(children_of([proc.pid])) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    group = [proc.pid, *children_of([proc.pid])]
    assert worker in group and len(group) == 3  # campaign, worker, the worker's child
    assert cli.main(["stop", "cpu"]) == 0
    assert proc.wait(timeout=5) != 0 and not CPU.pid_file.exists()
    assert wait_gone(group, 5) == []
    assert f"stopped pid {proc.pid} and its workers" in capsys.readouterr().out
    assert cli.main(["stop", "cpu"]) == 0  # nothing running: says so
    assert "not running" in capsys.readouterr().out


def test_a_reused_pid_of_another_program_is_not_a_campaign():
    assert not process.is_alive(os.getpid())  # pytest's command line has no campaign mark


def _pool_parent(tmp_path: Path, signals: str = "") -> tuple[subprocess.Popen, list[int]]:
    parent = subprocess.Popen(
        [sys.executable, "-c", POOL.format(signals=signals)],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(alive(p) for p in workers)
    return parent, workers


def test_pool_workers_end_when_their_parent_is_killed(tmp_path):
    """kill -9 of a train stage or campaign: no clean-up runs, yet no worker trains on."""
    parent, workers = _pool_parent(tmp_path)
    try:
        parent.kill()
        parent.wait()
        assert wait_gone(workers, 20) == [], "orphaned workers"
    finally:
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_of_a_foreground_campaign_ends_its_workers(tmp_path, signum):
    """`envgen campaign run` in a script (no group of its own): the signal reaches it
    alone, and it ends its workers before it exits."""
    signals = "from envgen.campaign.process import end_group_on_signal; end_group_on_signal()"
    parent, workers = _pool_parent(tmp_path, signals)
    try:
        parent.send_signal(signum)
        assert parent.wait(timeout=20) == 128 + signum
        assert wait_gone(workers, 20) == []
    finally:
        parent.kill()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


VECTOR = """
import time
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv
env = CrafterVecEnv([CrafterConfig()], num_envs=2, seed=0, num_workers=2)
env.reset()
print(*(p.pid for p in env._procs), flush=True)
time.sleep(120)
"""


def test_vector_env_workers_end_when_their_process_is_killed(tmp_path):
    """`envgen run` killed with -9: its env workers (children of the forkserver) end too."""
    parent = subprocess.Popen(
        [sys.executable, "-c", VECTOR], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, text=True
    )
    workers = [int(p) for p in parent.stdout.readline().split()]
    family = [*workers, *children_of([parent.pid])]
    try:
        assert workers and all(alive(p) for p in workers)
        parent.kill()
        parent.wait()
        assert wait_gone(family, 20) == [], "orphaned env workers or forkserver"
    finally:
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# A parent that starts a program (not Python's multiprocessing) the way the local LLM
# server is started, prints its pid and waits.
BOUND = """
import subprocess, sys, time
from envgen.lifetime import bound_to_parent
child = subprocess.Popen(bound_to_parent(["sleep", "120"]))
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_program_started_bound_to_its_parent_ends_when_the_parent_is_killed(tmp_path):
    """`envgen.lifetime.bound_to_parent` (the local LLM server): kill -9 of the parent,
    which runs no clean-up, still ends the program, with the pid it was started as."""
    parent = subprocess.Popen(
        [sys.executable, "-c", BOUND], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, text=True
    )
    child = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 20  # the launcher execs `sleep` in the same pid
        while b"sleep" not in Path(f"/proc/{child}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the launcher did not exec the program"
            time.sleep(0.05)
        parent.kill()
        parent.wait()
        assert wait_gone([child], 10) == [], "the program outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


# The variables a started campaign process sees, written to its log (`launch` appends
# --lock-fd N to the command: it lands in sys.argv, unread).
PRINT_SERVER = "import os; print('server:', os.environ.get('ENVGEN_LOCAL_SERVER'), flush=True)"


def test_a_started_campaign_runs_with_the_local_server_its_registration_fixed(
    tmp_path, monkeypatch
):
    """The headline campaign recorded its replies with llama-cpp-python's server before
    the default changed (docs/campaign_headline.md, Deviations): its sessions choose that
    server through ENVGEN_LOCAL_SERVER; a campaign that fixed none gets no variable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENVGEN_LOCAL_SERVER", raising=False)
    seen = {}
    for name in ("headline", "cpu"):
        c = campaigns()[name]
        lock = process.acquire(c)
        try:
            pid = process.launch(c, [sys.executable, "-c", PRINT_SERVER], lock, 1)
        finally:
            os.close(lock)
        assert wait_gone([pid], 30) == []
        seen[name] = c.log.read_text().strip()
    assert seen == {"headline": "server: llama-cpp-python", "cpu": "server: None"}
    assert "ENVGEN_LOCAL_SERVER" not in os.environ  # this process's own is untouched


def test_a_foreground_campaign_session_chooses_the_same_server(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVGEN_LOCAL_SERVER", "llama.cpp")  # overruled by the registration
    seen = []
    monkeypatch.setattr(
        run, "run_campaign", lambda request: seen.append(os.environ["ENVGEN_LOCAL_SERVER"]) or 0
    )
    assert run.run(campaigns()["headline"], REPO / "params.yaml", Path("runs"), 1, False) == 0
    assert seen == ["llama-cpp-python"]
