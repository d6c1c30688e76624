"""The real local backend: start the bundled server, record, stop, replay offline; the
server never outlives the process that started it, however that process ends."""

import dataclasses
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envgen.errors import LLMTransportError
from envgen.llm.cache import CachedLLM
from envgen.llm.client import BACKENDS, OpenAIChat, backend_config
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.request import ChatRequest, Message
from envgen.llm.server import LocalServer, ServerOptions

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None,
        reason="xllamacpp is not importable: install the local-llm extra (make setup-llm)",
    ),
]


def test_record_with_local_server_then_replay_offline(tmp_path, monkeypatch):
    options = PromptOptions(structured=BACKENDS["local"].structured, initial_set=1)
    with LocalServer(ServerOptions.for_model()) as server:
        backend = backend_config("local", base_url=server.base_url)
        recorder = CachedLLM("record", tmp_path, backend)
        recorded = EnvironmentDesigner(options, recorder).generate(1)
    assert len(list(tmp_path.glob("*.json"))) == recorder.ledger.summary()["calls"]

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    replayer = CachedLLM("replay", tmp_path, BACKENDS["local"])
    replayed = EnvironmentDesigner(options, replayer).generate(1)
    assert replayed.configs == recorded.configs
    assert replayer.ledger.summary()["cache_hits"] == recorder.ledger.summary()["calls"]


REPO = Path(__file__).resolve().parents[1]

# A process that starts the server as `--llm-mode fill` does (`envgen.pipeline.train.
# llm_spec`; campaigns with a local model and `envgen run` go through the same
# `LocalServer`) and, like `envgen pipeline train`, holds a worker pool busy for 2
# minutes; prints the server's pid (its child running envgen.llm.llama_server) and the workers.
PARENT = """
import os, time
from pathlib import Path
from envgen.pipeline.executor import worker_pool
from envgen.pipeline.recording import llm_spec

def server_pid():
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            command = (entry / "cmdline").read_bytes()
            if ppid == os.getpid() and b"envgen.llm.llama_server" in command:
                return entry.name
        except (OSError, ValueError, IndexError):
            pass

with llm_spec("fill", "cache") as spec, worker_pool(2) as pool:
    futures = [pool.submit(time.sleep, 120) for _ in range(2)]
    while len(pool._processes) < 2:
        time.sleep(0.05)
    print(server_pid(), *pool._processes, flush=True)
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        return ") Z" not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


def _wait_gone(pids: list[int], within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _sigint_default() -> None:
    """The parent starts with SIGINT at its default action, as from a terminal. A process
    started with SIGINT ignored (pytest-xdist's workers, a non-interactive shell's `&`)
    passes that on, Python then keeps ignoring it, and `signals_exit` rightly leaves an
    ignored signal alone: the parent would sleep through the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("signum", "code"),
    [
        (signal.SIGTERM, 128 + signal.SIGTERM),
        (signal.SIGINT, -signal.SIGINT),
        (signal.SIGKILL, None),
    ],
)
def test_the_server_ends_with_the_process_that_started_it(tmp_path, signum, code):
    """SIGTERM and Ctrl-C: an orderly exit (the server stopped, its log directory
    removed, the pool's workers ended without waiting for their jobs); kill -9: the
    kernel ends the server and the workers."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,
    )
    learned: list[int] = []
    try:
        line = parent.stdout.readline().split()
        assert line, f"the parent printed nothing (exit {parent.wait()})"
        learned = [int(p) for p in line]  # the server, the workers
        assert len(learned) == 3 and all(map(_alive, learned))
        assert list(temp.glob("envgen-llm-server-*"))  # the server's log
        parent.send_signal(signum)
        returned = parent.wait(timeout=30)
        if code is not None:
            assert returned == code
            assert not list(temp.glob("envgen-llm-server-*")), "no clean-up ran"
        assert _wait_gone(learned, 10) == [], "the server or a worker outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        for pid in learned:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_request_after_the_server_died_fails_with_one_line():
    with LocalServer(ServerOptions.for_model()) as server:
        backend = backend_config("local", base_url=server.base_url)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        request = ChatRequest((Message("user", "hi"),), temperature=0, seed=0, max_tokens=8)
        with pytest.raises(LLMTransportError) as raised:
            OpenAIChat(dataclasses.replace(backend, max_retries=1))(request)
    message = str(raised.value)
    assert message.startswith(f"cannot reach {server.base_url}") and "\n" not in message
