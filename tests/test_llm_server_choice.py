"""Which local server runs: llama.cpp's (xllamacpp, the default) or llama-cpp-python's,
chosen by ENVGEN_LOCAL_SERVER for a campaign whose registration recorded with it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envgen.errors import ConfigError, EnvGenError
from envgen.llm.server import LocalServer, ServerOptions, chosen_server, server_command


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
