"""OpenAI-SDK client: retries, error paths and key handling, through a stub transport."""

import dataclasses
import json

import httpx
import pytest

from envgen.errors import ConfigError, LLMTransportError
from envgen.llm.client import OpenAIChat, api_key, backend_config
from envgen.llm.request import ChatRequest, Message

SECRET = "sk-test-0123456789abcdef"
REQUEST = ChatRequest(
    messages=(Message("user", "design 1 environment"),),
    temperature=0.0,
    seed=2,
    max_tokens=64,
    response_format={"type": "json_object"},
)


def _completion(text: str) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4-1106-preview",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class StubServer:
    """Answers with the given (status, body) pairs in turn and keeps what it received."""

    def __init__(self, *replies: tuple[int, dict]):
        self.replies = list(replies)
        self.received: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.received.append(request)
        status, body = self.replies.pop(0)
        return httpx.Response(status, json=body, headers={"retry-after-ms": "1"})

    def client(self, monkeypatch, max_retries: int = 2) -> OpenAIChat:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        backend = dataclasses.replace(backend_config("openai"), max_retries=max_retries)
        return OpenAIChat(backend, http_client=httpx.Client(transport=httpx.MockTransport(self)))


def test_request_fields_and_reply(monkeypatch):
    server = StubServer((200, _completion("hello")))
    reply = server.client(monkeypatch)(REQUEST)
    assert (reply.text, reply.model, reply.finish_reason) == ("hello", "gpt-4-1106-preview", "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 7)
    body = json.loads(server.received[0].content)
    assert body["model"] == "gpt-4-1106-preview"
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (2, 0.0, 64)
    assert body["response_format"] == {"type": "json_object"}
    assert server.received[0].headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_then_succeeds(monkeypatch, status):
    server = StubServer((status, {"error": {"message": "busy"}}), (200, _completion("ok")))
    assert server.client(monkeypatch)(REQUEST).text == "ok"
    assert len(server.received) == 2


def test_gives_up_after_max_retries(monkeypatch):
    server = StubServer(*[(429, {"error": {"message": "rate limited"}})] * 3)
    with pytest.raises(LLMTransportError, match="HTTP 429 .*after up to 2 retries"):
        server.client(monkeypatch, max_retries=2)(REQUEST)
    assert len(server.received) == 3


def test_client_errors_are_not_retried_and_hide_the_key(monkeypatch):
    echoed = {"error": {"message": f"Incorrect API key provided: {SECRET}."}}
    server = StubServer((401, echoed))
    with pytest.raises(LLMTransportError) as err:
        server.client(monkeypatch)(REQUEST)
    assert len(server.received) == 1
    assert "HTTP 401" in str(err.value) and SECRET not in str(err.value)


def test_key_from_dotenv_file(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(f"# local secrets\nOPENAI_API_KEY={SECRET}\n")
    assert api_key(env_file) == SECRET


def test_missing_key_says_how_to_set_it(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY: not set; export it"):
        api_key(tmp_path / ".env")


def test_backend_options_are_checked():
    with pytest.raises(ConfigError, match="needs --base-url"):
        backend_config("compatible", model="deepseek-coder-33b-instruct")
    with pytest.raises(ConfigError, match="'claude' unknown; use one of local, openai"):
        backend_config("claude")
    assert backend_config("openai", model="gpt-3.5-turbo").record_flags() == (
        "--backend openai --model gpt-3.5-turbo"
    )


def _compatible(server: StubServer) -> OpenAIChat:
    backend = backend_config("compatible", model="deepseek", base_url="http://third.party/v1")
    return OpenAIChat(backend, http_client=httpx.Client(transport=httpx.MockTransport(server)))


def test_compatible_backend_never_sends_the_openai_key(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("ENVGEN_COMPATIBLE_API_KEY", raising=False)
    server = StubServer((200, _completion("hi")))
    _compatible(server)(REQUEST)
    assert SECRET not in server.received[0].headers["authorization"]
    own = "ds-own-key-98765432"
    monkeypatch.setenv("ENVGEN_COMPATIBLE_API_KEY", own)
    server = StubServer((200, _completion("hi")))
    _compatible(server)(REQUEST)
    assert server.received[0].headers["authorization"] == f"Bearer {own}"


@pytest.mark.parametrize(
    "echo", ["{key}", "key {head}****{tail} is wrong", "bad token '{head}...'"]
)
def test_any_configured_key_is_scrubbed_from_errors(monkeypatch, tmp_path, echo):
    monkeypatch.chdir(tmp_path)
    key = "ds-Zq81xVbN0c7TtQ2w"  # not an sk- key
    monkeypatch.setenv("ENVGEN_COMPATIBLE_API_KEY", key)
    message = echo.format(key=key, head=key[:6], tail=key[-6:])
    server = StubServer((401, {"error": {"message": f"Invalid key: {message}"}}))
    with pytest.raises(LLMTransportError) as err:
        _compatible(server)(REQUEST)
    assert "HTTP 401" in str(err.value)
    assert key[:6] not in str(err.value) and key[-6:] not in str(err.value)
