"""Backends on the `openai` SDK: OpenAI itself or any OpenAI-compatible server.

Retries with exponential backoff on 408/409/429/5xx and connection errors are the
SDK's own (`max_retries`, honouring Retry-After); timeouts are per request. Each
backend reads its key from its own variable, in the environment or a git-ignored `.env`
file: OpenAI's from `OPENAI_API_KEY`, any other server's from
`ENVGEN_COMPATIBLE_API_KEY` (optional), so an OpenAI key is never sent to a third-party
URL. A key is only ever handed to the SDK: it is not part of any request record, cache
file or error message (errors are scrubbed of the configured key, whatever its form).
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
COMPATIBLE_KEY_VARIABLE = "ENVGEN_COMPATIBLE_API_KEY"
NO_KEY = "no-key-needed"  # the SDK insists on some key; this one is not a secret
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
    key_variable: str | None = KEY_VARIABLE
    """The variable (environment or .env) holding this backend's key; None sends none."""
    key_required: bool = True
    """Whether requests fail without the key (OpenAI) or go without one (other servers)."""

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
        key_variable=None,
        key_required=False,
    ),
    "openai": BackendConfig("openai", "gpt-4-1106-preview"),
    # Never OPENAI_API_KEY: that key belongs to OpenAI, not to whoever runs --base-url.
    "compatible": BackendConfig(
        "compatible", "", key_variable=COMPATIBLE_KEY_VARIABLE, key_required=False
    ),
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


def api_key(
    env_file: Path = Path(".env"), variable: str = KEY_VARIABLE, required: bool = True
) -> str | None:
    """The key in `variable` from the environment, else from `env_file`; None when it is
    not set and not `required`."""
    key = os.environ.get(variable) or (
        dotenv_values(env_file).get(variable) if env_file.is_file() else None
    )
    if not key and required:
        raise ConfigError(
            variable,
            f"not set; export it, or write {variable}=... into {env_file} "
            "(git-ignored). Cached replies replay without a key (mode 'replay').",
        )
    return key or None


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
        key = (
            api_key(env_file, backend.key_variable, backend.key_required)
            if backend.key_variable
            else None
        )
        self._secrets = (key,) if key else ()
        self._client = openai.OpenAI(
            api_key=key or NO_KEY,
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
                f"{scrub(exc.message, self._secrets)}"
            ) from None
        except openai.APIConnectionError as exc:
            where = self.backend.base_url or "api.openai.com"
            raise LLMResponseError(
                f"cannot reach {where} (after {self.backend.max_retries} retries): "
                f"{scrub(str(exc), self._secrets)}"
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


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with each of `secrets` masked, and any word holding a long enough start or
    end of one (servers echo keys partly masked, e.g. `abcd****wxyz`), and OpenAI-style
    `sk-` keys: error texts may echo a key; never pass it on."""
    for secret in secrets:
        text = text.replace(secret, "***")
        if len(secret) >= 12:
            parts = (re.escape(secret[:6]), re.escape(secret[-6:]))
            text = re.sub(rf"\S*(?:{'|'.join(parts)})\S*", "***", text)
    return _SECRET.sub("sk-***", text)
