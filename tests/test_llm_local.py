"""The real local backend: start the bundled server, record, stop, replay offline."""

import importlib.util
import socket

import pytest

from envgen.llm import BACKENDS, CachedLLM, EnvironmentDesigner, PromptOptions, backend_config
from envgen.llm.server import LocalServer, ServerOptions, bundled_model_path

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None,
        reason="llama_cpp is not importable: install the local-llm extra (make setup-llm)",
    ),
]


def test_record_with_local_server_then_replay_offline(tmp_path, monkeypatch):
    options = PromptOptions(structured=BACKENDS["local"].structured, initial_set=1)
    with LocalServer(ServerOptions(bundled_model_path())) as server:
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
