"""Backends on the `openai` SDK: OpenAI itself or any OpenAI-compatible server.

Retries with exponential backoff on 408/409/429/5xx and connection errors are the
SDK's own (`max_retries`, honouring Retry-After); timeouts are per request. The API
key comes from `OPENAI_API_KEY` or a git-ignored `.env` file and is only ever handed
to the SDK: it is not part of any request record, cache file or error message.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import httpx
import openai
from dotenv import dotenv_values

from envgen.errors import ConfigError, LLMResponseError
from envgen.llm.request import ChatRequest, ChatResponse, Usage
from envgen.llm.schema import DIALECTS

LOCAL_MODEL = "smollm2-135m-instruct"  # the alias the local server answers to
KEY_VARIABLE = "OPENAI_API_KEY"
_SECRET = re.compile(r"sk-[\w*-]+")


@dataclasses.dataclass(frozen=True)
class BackendConfig:
    """Where requests go and how."""

    name: str
    """"local" (bundled SmolLM2 server), "openai", or "compatible" (any other server)."""
    model: str
    """Model name sent with every request (part of the cache key)."""
    base_url: str | None = None
    """Server URL ending in /v1; None is OpenAI's own."""
    structured: str = "off"
    """Structured-output dialect the server speaks (see `envgen.llm.schema`)."""
    timeout_s: float = 120.0
    """Per-request timeout in seconds."""
    max_retries: int = 4
    """SDK retries (exponential backoff) on 408/409/429/5xx and connection errors."""
    needs_key: bool = True
    """Whether requests need `OPENAI_API_KEY` (a local server does not)."""

    def record_flags(self) -> str:
        """The `envgen llm record` options that select this backend."""
        if self.name == "local":
            return "--backend local"
        flags = f"--backend {self.name} --model {self.model}"
        if self.base_url:
            flags += f" --base-url {self.base_url}"
        return flags


# The local model answers far slower on 2 CPU cores and its grammar-constrained
# structured output makes every reply parse (docs/llm.md, "Local backend").
BACKENDS: dict[str, BackendConfig] = {
    "local": BackendConfig(
        "local",
        LOCAL_MODEL,
        structured="json_object",
        timeout_s=900.0,
        max_retries=1,
        needs_key=False,
    ),
    "openai": BackendConfig("openai", "gpt-4-1106-preview"),
    "compatible": BackendConfig("compatible", ""),
}


def backend_config(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    structured: str | None = None,
) -> BackendConfig:
    """A preset from `BACKENDS`, with the given fields overridden."""
    if name not in BACKENDS:
        raise ConfigError("backend", f"{name!r} unknown; use one of {', '.join(BACKENDS)}")
    config = BACKENDS[name]
    changes = {
        k: v
        for k, v in (("model", model), ("base_url", base_url), ("structured", structured))
        if v is not None
    }
    config = dataclasses.replace(config, **changes)
    if not config.model:
        raise ConfigError("model", f"backend {name!r} needs --model (the server's model name)")
    if name == "local" and config.model != LOCAL_MODEL:
        raise ConfigError(
            "model",
            f"the local backend serves only the bundled {LOCAL_MODEL!r}, not {config.model!r}; "
            "record that model's replies with `--backend openai` (OpenAI models) or "
            "`--backend compatible --base-url URL` (a server that serves it)",
        )
    if name == "compatible" and not config.base_url:
        raise ConfigError("base_url", "backend 'compatible' needs --base-url (e.g. .../v1)")
    if config.structured not in DIALECTS:
        raise ConfigError("structured", f"{config.structured!r} unknown; use one of {DIALECTS}")
    return config


def api_key(env_file: Path = Path(".env")) -> str:
    """`OPENAI_API_KEY` from the environment, else from `env_file`."""
    key = os.environ.get(KEY_VARIABLE) or (
        dotenv_values(env_file).get(KEY_VARIABLE) if env_file.is_file() else None
    )
    if not key:
        raise ConfigError(
            KEY_VARIABLE,
            f"not set; export it, or write {KEY_VARIABLE}=... into {env_file} "
            "(git-ignored). Cached replies replay without a key (mode 'replay').",
        )
    return key


class OpenAIChat:
    """An `LLMCallable` over the SDK's chat completions endpoint."""

    def __init__(
        self,
        backend: BackendConfig,
        *,
        http_client: httpx.Client | None = None,
        env_file: Path = Path(".env"),
    ):
        self.backend = backend
        self._client = openai.OpenAI(
            api_key=api_key(env_file) if backend.needs_key else "no-key-needed",
            base_url=backend.base_url,
            timeout=backend.timeout_s,
            max_retries=backend.max_retries,
            http_client=http_client,
        )

    def __call__(self, request: ChatRequest) -> ChatResponse:
        kwargs = {}
        if request.response_format is not None:
            kwargs["response_format"] = dict(request.response_format)
        try:
            completion = self._client.chat.completions.create(
                model=self.backend.model,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                temperature=request.temperature,
                seed=request.seed,
                max_tokens=request.max_tokens,
                **kwargs,
            )
        except openai.APIStatusError as exc:
            raise LLMResponseError(
                f"{self.backend.name} server answered HTTP {exc.status_code} for model "
                f"{self.backend.model!r} (after up to {self.backend.max_retries} retries): "
                f"{_scrub(exc.message)}"
            ) from None
        except openai.APIConnectionError as exc:
            where = self.backend.base_url or "api.openai.com"
            raise LLMResponseError(
                f"cannot reach {where} (after {self.backend.max_retries} retries): "
                f"{_scrub(str(exc))}"
            ) from None
        choice = completion.choices[0]
        usage = completion.usage
        return ChatResponse(
            text=choice.message.content or "",
            model=completion.model,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
            finish_reason=choice.finish_reason or "",
            created=int(completion.created),
        )


def _scrub(text: str) -> str:
    """Error texts may echo a (partly masked) key; never pass it on."""
    return _SECRET.sub("sk-***", text)
