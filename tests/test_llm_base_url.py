"""The OpenAI backend names the server it called: an inherited $OPENAI_BASE_URL, not
api.openai.com, when that is where the request (and the key) went."""

from __future__ import annotations

import dataclasses

import pytest

from envgen.errors import LLMTransportError
from envgen.llm.client import OpenAIChat, backend_config
from envgen.llm.request import ChatRequest, Message


def test_an_inherited_base_url_is_named_in_the_error(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    backend = dataclasses.replace(
        backend_config("openai", model="gpt-4-1106-preview"), max_retries=0, timeout_s=2.0
    )
    chat = OpenAIChat(backend, env_file=tmp_path / "none.env")
    request = ChatRequest((Message("user", "hi"),), 0.0, 0, 8)
    with pytest.raises(LLMTransportError) as caught:
        chat(request)
    assert "127.0.0.1:9" in str(caught.value) and "api.openai.com" not in str(caught.value)
    assert "sk-test" not in str(caught.value)
