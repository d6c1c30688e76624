"""The local backend: llama.cpp's OpenAI-compatible server with a local model
(`envgen.llm.local_models`; nothing is downloaded at run time).

`LocalServer` starts the server on a free port with one thread, waits until /v1/models
answers, and stops it on exit. It never outlives its parent: it is started bound to it
(`envgen.lifetime.bound_to_parent`, `kill -9` included), and the parent's SIGTERM or
SIGINT stops it (`envgen.lifetime.signals_exit`); a server that died first fails the
next request with one line (`LLMTransportError`). Two servers can serve (`SERVERS`):
llama.cpp's own from the prebuilt `xllamacpp` wheel (the default) and llama-cpp-python's
(`make setup-llm-source`), whose sampling differs, kept for a campaign that recorded
with it. `ENVGEN_LOCAL_SERVER` chooses: no run config field, so no run's hash depends
on it (`envgen campaign start` sets it: `Campaign.local_server`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from envgen.errors import ConfigError, EnvGenError
from envgen.lifetime import bound_to_parent, signals_exit
from envgen.llm.client import LOCAL_MODEL, BackendConfig
from envgen.llm.local_models import local_model, model_path

SERVER_VARIABLE = "ENVGEN_LOCAL_SERVER"
"""The environment variable that chooses the local server (unset: `DEFAULT_SERVER`)."""
DEFAULT_SERVER = "llama.cpp"
SERVERS = {"llama.cpp": "envgen.llm.llama_server", "llama-cpp-python": "llama_cpp.server"}
"""{server name: the module `python -m` runs for it}; both take the same options."""


def chosen_server() -> str:
    """The server `ENVGEN_LOCAL_SERVER` names (unset or empty: `DEFAULT_SERVER`)."""
    return _known_server(os.environ.get(SERVER_VARIABLE, "") or DEFAULT_SERVER, SERVER_VARIABLE)


def _known_server(name: str, where: str) -> str:
    if name not in SERVERS:
        raise ConfigError(where, f"{name!r} is not a local server; use one of {', '.join(SERVERS)}")
    return name


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """How the local server runs."""

    model_path: Path
    """GGUF file to serve (see `envgen.llm.local_models.model_path`)."""
    alias: str = LOCAL_MODEL
    """The model name the server answers to (requests carry it)."""
    port: int = 0
    """TCP port on 127.0.0.1; 0 picks a free one."""
    threads: int = 1
    """CPU threads; 1 is fastest on a shared 2-core machine (busy-waiting threads stall)."""
    n_ctx: int = 16384
    """Context window in tokens; `for_model` takes the model's (`LocalModel.n_ctx`)."""
    startup_timeout_s: float = 120.0
    """How long to wait for /v1/models to answer."""
    server: str = dataclasses.field(default_factory=chosen_server)
    """Which server runs (`SERVERS`); by default the one `ENVGEN_LOCAL_SERVER` names."""

    def __post_init__(self) -> None:
        _known_server(self.server, "server")

    @classmethod
    def for_model(cls, alias: str = LOCAL_MODEL, **changes: object) -> ServerOptions:
        """Options that serve local model `alias` with its file and context window."""
        return cls(
            model_path=model_path(alias), alias=alias, n_ctx=local_model(alias).n_ctx, **changes
        )


def server_command(options: ServerOptions, port: int) -> list[str]:
    """The `python -m MODULE` command line of `options.server` (`SERVERS`)."""
    return [
        sys.executable, "-m", SERVERS[options.server],
        "--model", str(options.model_path),
        "--model_alias", options.alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(options.n_ctx),
        "--n_threads", str(options.threads),
        "--n_threads_batch", str(options.threads),
        "--seed", "0",
    ]  # fmt: skip


class LocalServer:
    """Context manager: a running local server; `base_url` is its /v1 endpoint."""

    def __init__(self, options: ServerOptions):
        self.options = options
        self.port = options.port or _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_dir: tempfile.TemporaryDirectory[str] | None = None
        self._signals = contextlib.ExitStack()

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (None before and after)."""
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> LocalServer:
        # llama.cpp's server says itself when it is missing (envgen.llm.llama_server);
        # llama_cpp is found, not imported (importing loads its library: about a second)
        server = self.options.server
        if server == "llama-cpp-python" and importlib.util.find_spec("llama_cpp") is None:
            raise EnvGenError(
                f"the local server llama-cpp-python ({SERVER_VARIABLE}={server}) is not "
                "installed; run `make setup-llm-source`"
            )
        self._signals.enter_context(signals_exit(self._terminate))
        try:
            self._log_dir = tempfile.TemporaryDirectory(prefix="envgen-llm-server-")
            self._log_path = Path(self._log_dir.name) / "server.log"
            with open(self._log_path, "wb") as log:
                self._process = subprocess.Popen(
                    bound_to_parent(server_command(self.options, self.port)),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def wait(self) -> int:
        """Block until the server exits (e.g. Ctrl-C); its exit code."""
        assert self._process is not None, "use LocalServer as a context manager"
        return self._process.wait()

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and clean its log."""
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None
            if self._log_dir is not None:
                self._log_dir.cleanup()
                self._log_dir = None
        finally:
            self._signals.close()

    def _terminate(self) -> None:
        """SIGTERM to the server, not waiting (the parent got SIGTERM; `stop` waits)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()

    def _wait_ready(self) -> None:
        # lazy: optional dependency (httpx): a machine that only trains (a GPU box) need
        # not have it (tests/test_lazy_imports.py)
        import httpx

        assert self._process is not None
        deadline = time.monotonic() + self.options.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise EnvGenError(f"the local LLM server exited early: {self._last_log_line()}")
            try:
                reply = httpx.get(f"{self.base_url}/models", timeout=2.0, trust_env=False)
                if reply.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        raise EnvGenError(
            f"the local LLM server did not answer within {self.options.startup_timeout_s:.0f}"
            f" s: {self._last_log_line()}"
        )

    def _last_log_line(self) -> str:
        """The server log's last line (where it says why), so the error is one line."""
        assert self._log_path is not None
        lines = self._log_path.read_text(errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else "(its log is empty)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_backend(
    config: BackendConfig, options: ServerOptions | None = None
) -> Iterator[BackendConfig]:
    """`config` itself, or for the local backend with no base URL, the server of its model
    started for the duration and `config` pointed at it."""
    if config.name != "local" or config.base_url:
        yield config
        return
    with LocalServer(options or ServerOptions.for_model(config.model)) as server:
        yield dataclasses.replace(config, base_url=server.base_url, server=server.options.server)
