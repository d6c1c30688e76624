"""Which local server runs: llama.cpp's (xllamacpp, the default) or llama-cpp-python's,
chosen by ENVGEN_LOCAL_SERVER for a campaign whose registration recorded with it."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from envgen.errors import ConfigError, EnvGenError
from envgen.llm import server
from envgen.llm.cache import CachedLLM, ResponseCache
from envgen.llm.client import LOCAL_MODEL, backend_config
from envgen.llm.request import ChatRequest, ChatResponse, Message, Usage
from envgen.llm.server import LocalServer, ServerOptions, chosen_server, server_command
from envgen.pipeline import recording

REPO = Path(__file__).resolve().parents[1]


def _module(options: ServerOptions) -> str:
    command = server_command(options, 8000)
    assert command[:2] == [sys.executable, "-m"]
    return command[2]


def test_the_default_is_llama_cpps_server_and_the_variable_chooses_the_other(monkeypatch):
    monkeypatch.delenv("ENVGEN_LOCAL_SERVER", raising=False)
    assert chosen_server() == "llama.cpp"
    assert _module(ServerOptions(Path("m.gguf"))) == "envgen.llm.llama_server"
    monkeypatch.setenv("ENVGEN_LOCAL_SERVER", "llama-cpp-python")
    options = ServerOptions(Path("m.gguf"), alias="a", n_ctx=512)
    assert options.server == "llama-cpp-python"
    command = server_command(options, 8000)
    assert command[2] == "llama_cpp.server"
    # the same options for both: the recipe the campaign recorded with
    assert command[3:] == server_command(ServerOptions(Path("m.gguf"), "a", n_ctx=512,
                                                       server="llama.cpp"), 8000)[3:]  # fmt: skip


def test_an_unknown_server_is_one_line_naming_the_choices(monkeypatch):
    monkeypatch.setenv("ENVGEN_LOCAL_SERVER", "vllm")
    with pytest.raises(ConfigError) as error:
        ServerOptions(Path("m.gguf"))
    assert str(error.value) == (
        "ENVGEN_LOCAL_SERVER: 'vllm' is not a local server; use one of llama.cpp, llama-cpp-python"
    )
    with pytest.raises(ConfigError, match="'x' is not a local server"):
        ServerOptions(Path("m.gguf"), server="x")


def test_llama_cpp_python_not_installed_names_its_setup_before_starting(monkeypatch, tmp_path):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # as without it
    options = ServerOptions(tmp_path / "m.gguf", server="llama-cpp-python")
    with pytest.raises(EnvGenError) as error, LocalServer(options):
        pass
    assert str(error.value) == (
        "the local server llama-cpp-python (ENVGEN_LOCAL_SERVER=llama-cpp-python) is not "
        "installed; run `make setup-llm-source`"
    )


def test_envgen_run_reports_an_unknown_server_in_one_line(monkeypatch, capsys, tmp_path):
    from envgen.cli import main

    monkeypatch.setenv("ENVGEN_LOCAL_SERVER", "vllm")
    config = Path(__file__).resolve().parent / "data/guard/envgen_llm.yaml"
    runs = ["--runs-root", str(tmp_path)]
    assert main(["run", str(config), "--seed", "0", "--llm-mode", "fill", *runs]) == 1
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("envgen run: ENVGEN_LOCAL_SERVER: 'vllm' is not a local server")


class _FakeServer:
    """Stands in for `LocalServer`: started, it answers at a URL; nothing runs."""

    def __init__(self, options: ServerOptions, **_: object):
        self.options = options
        self.base_url = "http://127.0.0.1:9/v1"

    def __enter__(self) -> _FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _reply(request: ChatRequest) -> ChatResponse:
    return ChatResponse("{}", LOCAL_MODEL, Usage(5, 2), "stop", 1)


REQUEST = ChatRequest((Message("user", "design"),), 0.0, 0, 16, label="test/call")


def test_each_reply_names_the_server_that_wrote_it_outside_its_key(tmp_path, monkeypatch):
    """`envgen run` and `envgen llm record` (running_backend) and the pipeline and
    campaigns (llm_spec) hand the started server's name to the cache, which stores it
    beside the reply; the request, so the key, is the same whichever server answered."""
    monkeypatch.setenv("ENVGEN_LOCAL_SERVER", "llama-cpp-python")
    monkeypatch.setattr(server, "LocalServer", _FakeServer)
    monkeypatch.setattr(recording, "LocalServer", _FakeServer)
    monkeypatch.setattr(server, "model_path", lambda alias: tmp_path / "m.gguf")
    with server.running_backend(backend_config("local")) as backend:
        assert backend.server == "llama-cpp-python"
    with recording.llm_spec("fill", tmp_path / "c") as spec:
        assert spec.build(LOCAL_MODEL).backend.server == "llama-cpp-python"
        assert spec.build("qwen2.5-coder-1.5b-instruct").backend.server is None  # replays
    keys = []
    for name in ("llama-cpp-python", "llama.cpp", None):
        cache = tmp_path / str(name)
        local = dataclasses.replace(backend_config("local"), server=name)
        CachedLLM("record", cache, local, client_factory=lambda b: _reply)(REQUEST)
        ((key, entry),) = ResponseCache(cache).entries()  # read back: checked
        assert entry.get("server") == name
        keys.append(key)
    assert len(set(keys)) == 1


def test_a_cache_file_whose_server_is_not_a_name_is_refused():
    from envgen.llm.entry import check_entry

    entry = json.loads(next((REPO / "data/llm_cache").glob("*.json")).read_text())
    check_entry({**entry, "server": "llama.cpp"})
    with pytest.raises(ValueError, match="'server' is not a string"):
        check_entry({**entry, "server": ["llama.cpp"]})
