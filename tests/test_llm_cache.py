"""Response cache: offline replay of the committed cache, misses, integrity, recording."""

import dataclasses
import json
import shutil
import socket
from pathlib import Path

import httpx
import pytest

from envgen.errors import CacheIntegrityError, CacheMissError
from envgen.llm.cache import CachedLLM, ResponseCache
from envgen.llm.client import BACKENDS, OpenAIChat, backend_config
from envgen.llm.conversation import EnvironmentDesigner
from envgen.llm.planned_calls import PLANNED_CALLS, planned_call, record_command
from envgen.llm.request import ChatRequest, Message, record_key, request_record

COMMITTED = Path(__file__).resolve().parents[1] / "data" / "llm_cache"
SECRET = "sk-test-never-stored-0123456789"


@pytest.fixture
def offline(monkeypatch):
    """Any attempt to open a network connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _no_client(backend):
    raise AssertionError("replay must not build a client")


def test_committed_cache_replays_every_planned_call_offline(offline):
    llm = CachedLLM("replay", COMMITTED, BACKENDS["local"], client_factory=_no_client)
    for label, call in PLANNED_CALLS.items():
        designer = EnvironmentDesigner(call.options(BACKENDS["local"]), llm)
        assert len(designer.generate(call.n).configs) == call.n, label
    summary = llm.ledger.summary()
    assert summary["calls"] == summary["cache_hits"] >= len(PLANNED_CALLS)
    assert summary["prompt_tokens"] > 0 and summary["cost_usd"] == 0.0


def test_replay_miss_names_model_key_and_command(offline, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    gpt4 = BACKENDS["openai"]
    llm = CachedLLM("replay", COMMITTED, gpt4, client_factory=_no_client)
    sent = []

    def spy(request):
        sent.append(request)
        return llm(request)

    designer = EnvironmentDesigner(planned_call("crafter/initial/n4/set0").options(gpt4), spy)
    with pytest.raises(CacheMissError) as err:
        designer.generate(4)
    message = str(err.value)
    assert "'gpt-4-1106-preview'" in message and "crafter/initial/n4/set0" in message
    assert record_key(request_record(sent[0], gpt4.model)) in message
    assert message.endswith(
        "envgen llm record --backend openai --model gpt-4-1106-preview "
        "--call crafter/initial/n4/set0"
    )


def test_the_record_command_repeats_temperature_redraw_and_reask_of_the_missed_call():
    local = BACKENDS["local"]
    first = ChatRequest((Message("user", "hi"),), 0.7, 1, 16, label="crafter/initial/n4/set1")
    reask = dataclasses.replace(first, label=first.label + "/reask1", reask=True)
    redraw = dataclasses.replace(first, label=first.label + "/redraw2/reask1", seed=2001)
    assert record_command(redraw, local).endswith(
        "--temperature 0.7 --redraw-repeats --mode fill --call crafter/initial/n4/set1"
    )
    assert record_command(first, local) == (
        "envgen llm record --backend local --temperature 0.7 --call crafter/initial/n4/set1"
    )
    assert record_command(reask, local).endswith(  # a re-ask alone asks for no redraws
        "--temperature 0.7 --mode fill --call crafter/initial/n4/set1"
    )
    cold = dataclasses.replace(first, temperature=0.0)
    assert "--temperature" not in record_command(cold, local)
    assert record_command(dataclasses.replace(first, label="crafter/adapt2/n4/set1"), local) is None


def test_key_covers_what_determines_the_reply():
    base = ChatRequest((Message("user", "hi"),), 0.0, 0, 16)
    key = record_key(request_record(base, "m"))
    assert key == record_key(request_record(dataclasses.replace(base, label="x", reask=True), "m"))
    for changed, model in [
        (dataclasses.replace(base, seed=1), "m"),
        (dataclasses.replace(base, temperature=0.5), "m"),
        (dataclasses.replace(base, max_tokens=17), "m"),
        (dataclasses.replace(base, response_format={"type": "json_object"}), "m"),
        (dataclasses.replace(base, messages=(Message("user", "hi!"),)), "m"),
        (base, "other-model"),
    ]:
        assert record_key(request_record(changed, model)) != key


def _stub_backend(monkeypatch, texts):
    """An OpenAIChat factory whose HTTP transport answers `texts` in turn."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    replies = list(texts)

    def answer(request):
        body = {
            "id": "c",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4-1106-preview",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": replies.pop(0)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
        return httpx.Response(200, json=body)

    transport = httpx.MockTransport(answer)
    return lambda backend: OpenAIChat(backend, http_client=httpx.Client(transport=transport))


REQUEST = ChatRequest((Message("user", "design"),), 0.0, 0, 16, label="test/call")


def test_record_stores_atomically_without_secrets_and_replays(tmp_path, monkeypatch):
    factory = _stub_backend(monkeypatch, ["first"])
    recorder = CachedLLM("record", tmp_path, backend_config("openai"), client_factory=factory)
    assert recorder(REQUEST).text == "first"
    (path,) = tmp_path.iterdir()  # no temporary files left behind
    assert SECRET not in path.read_text() and "sk-" not in path.read_text()
    entry = json.loads(path.read_text())
    assert entry["label"] == "test/call" and entry["response"]["usage"]["prompt_tokens"] == 5
    replayer = CachedLLM("replay", tmp_path, backend_config("openai"), client_factory=_no_client)
    reply = replayer(REQUEST)
    assert (reply.text, reply.cached) == ("first", True)


def test_record_refuses_a_different_reply_but_accepts_the_same(tmp_path, monkeypatch):
    factory = _stub_backend(monkeypatch, ["first", "first", "second"])
    recorder = CachedLLM("record", tmp_path, backend_config("openai"), client_factory=factory)
    recorder(REQUEST)
    recorder(REQUEST)
    with pytest.raises(CacheIntegrityError, match="different reply .* Delete the file"):
        recorder(REQUEST)
    assert json.loads(next(tmp_path.iterdir()).read_text())["response"]["text"] == "first"


def test_fill_calls_only_on_miss_and_live_stores_nothing(tmp_path, monkeypatch):
    factory = _stub_backend(monkeypatch, ["a", "b"])
    filler = CachedLLM("fill", tmp_path, backend_config("openai"), client_factory=factory)
    assert filler(REQUEST).text == "a"
    assert filler(REQUEST).text == "a"  # from the cache: the stub still holds "b"
    live_dir = tmp_path / "live"
    live = CachedLLM("live", live_dir, backend_config("openai"), client_factory=factory)
    assert live(REQUEST).text == "b"
    assert not live_dir.exists()


def test_edited_or_renamed_files_are_rejected(tmp_path):
    source = next(COMMITTED.glob("*.json"))
    edited = tmp_path / "edited"
    edited.mkdir()
    entry = json.loads(source.read_text())
    entry["request"]["seed"] = 99
    (edited / source.name).write_text(json.dumps(entry))
    with pytest.raises(CacheIntegrityError, match="hashes to"):
        ResponseCache(edited).load(source.stem)

    renamed = tmp_path / "renamed"
    renamed.mkdir()
    shutil.copy(source, renamed / ("0" * 64 + ".json"))
    with pytest.raises(CacheIntegrityError, match="not to its name"):
        list(ResponseCache(renamed).entries())

    (renamed / ("0" * 64 + ".json")).write_text("{not json")
    with pytest.raises(CacheIntegrityError, match="unreadable cache file"):
        list(ResponseCache(renamed).entries())


def test_unknown_mode_is_named():
    with pytest.raises(Exception, match="'replay-only' unknown; use one of replay, record"):
        CachedLLM("replay-only", COMMITTED, BACKENDS["local"])
