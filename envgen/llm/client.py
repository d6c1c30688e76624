"""Backends on the `openai` SDK: OpenAI itself or any OpenAI-compatible server.

The SDK retries 408/409/429/5xx and connection errors with backoff (`max_retries`); a
200 reply that is no well-formed chat completion is retried as often. Every failure to
get a reply is an `LLMTransportError`, never a reply, so never stored. OpenAI's key is
read from `OPENAI_API_KEY`, any other server's from `ENVGEN_COMPATIBLE_API_KEY`
(optional), in the environment or a git-ignored `.env`, so an OpenAI key never goes to
a third-party URL; keys go only to the SDK, and error texts are scrubbed of them.
`openai`, `httpx` and `dotenv` are imported only where used: a run that replays needs
none of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envgen.errors import ConfigError, LLMTransportError
from envgen.llm import local_models
from envgen.llm.request import ChatRequest, ChatResponse, Usage
from envgen.llm.schema import DIALECTS

if TYPE_CHECKING:
    import httpx
    import openai

LOCAL_MODEL = "smollm2-135m-instruct"  # the local backend's default (the tests' model)
LOCAL_MODELS = tuple(local_models.LOCAL_MODELS)  # every model the local server can serve
KEY_VARIABLE = "OPENAI_API_KEY"
COMPATIBLE_KEY_VARIABLE = "ENVGEN_COMPATIBLE_API_KEY"
DEFAULT_BACKEND = "local"
"""Every command's `--backend` default: the bundled model's server, which a fresh clone
can run offline; any other model is recorded only through a backend named on purpose."""
KEYS_HELP = (
    f"--backend openai reads its key from {KEY_VARIABLE}, --backend compatible from "
    f"{COMPATIBLE_KEY_VARIABLE} (optional), in the environment or .env"
)
"""The key variables as every command's --help names them, from the constants the code reads."""
NO_KEY = "no-key-needed"  # the SDK insists on some key; this one is not a secret
_SECRET = re.compile(r"sk-[\w*-]+")


@dataclasses.dataclass(frozen=True)
class BackendConfig:
    """Where requests go and how."""

    name: str
    """"local" (llama.cpp server on this machine), "openai", or "compatible" (any other)."""
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
    server: str | None = None
    """The local server started for this backend (`envgen.llm.server.SERVERS`), recorded
    with each reply; None where it is not known (a server given by URL)."""

    def record_flags(self) -> str:
        """The `envgen llm record` options that select this backend."""
        flags = f"--backend {self.name}"
        if self.name != "local" or self.model != LOCAL_MODEL:
            flags += f" --model {self.model}"
        if self.name != "local" and (self.base_url or self.name == "compatible"):
            flags += f" --base-url {self.base_url or 'URL'}"  # replay's has none: the user's
        return flags + self._structured_flag()

    def _structured_flag(self) -> str:
        """` --structured D` where the dialect is not the backend preset's: it writes the
        prompt and request, so a recording of the same calls must ask in it too."""
        preset = BACKENDS[self.name].structured if self.name in BACKENDS else "off"
        return f" --structured {self.structured}" if self.structured != preset else ""


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


def replay_backend(model: str) -> str:
    """The backend whose preset keys `model`'s replies in replay, where none is named:
    local for the local models, else openai (compatible's preset speaks the same dialect)."""
    return "local" if model in LOCAL_MODELS else "openai"


def backend_config(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    structured: str | None = None,
    calls: bool = True,
) -> BackendConfig:
    """A preset from `BACKENDS`, with the given fields overridden. `calls=False`: for
    replay, which never connects, so `compatible` needs no server URL there."""
    if name not in BACKENDS:
        raise ConfigError("backend", f"{name!r} unknown; use one of {', '.join(BACKENDS)}")
    given = {"model": model, "base_url": base_url, "structured": structured}
    config = dataclasses.replace(
        BACKENDS[name], **{k: v for k, v in given.items() if v is not None}
    )
    if not config.model:
        raise ConfigError("model", f"backend {name!r} needs --model (the server's model name)")
    if name == "local":
        local_models.local_model(config.model)  # a ConfigError unless the server serves it
    if name == "compatible" and not config.base_url and calls:
        raise ConfigError(
            "base_url",
            "backend 'compatible' needs --base-url (the server's URL ending in /v1) to call "
            "it; replay calls nothing and needs none",
        )
    if config.structured not in DIALECTS:
        raise ConfigError("structured", f"{config.structured!r} unknown; use one of {DIALECTS}")
    return config


def api_key(
    env_file: Path = Path(".env"), variable: str = KEY_VARIABLE, required: bool = True
) -> str | None:
    """The key in `variable` from the environment, else `env_file`; None if unset, not required."""
    key = os.environ.get(variable)
    if not key and env_file.is_file():
        # lazy: optional dependency (dotenv): a Crafter run on a GPU machine without it
        # loads this module and must not load dotenv (tests/test_lazy_imports.py)
        from dotenv import dotenv_values

        key = dotenv_values(env_file).get(variable)
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
        key = backend.key_variable and api_key(env_file, backend.key_variable, backend.key_required)
        self._secrets = (key,) if key else ()
        import openai  # lazy: optional dependency (openai), as dotenv in api_key

        self._client = openai.OpenAI(
            api_key=key or NO_KEY,
            base_url=backend.base_url,
            timeout=backend.timeout_s,
            max_retries=backend.max_retries,
            http_client=http_client,
        )

    def __call__(self, request: ChatRequest) -> ChatResponse:
        import openai  # lazy: optional dependency (openai), as dotenv in api_key

        kwargs = {}
        if request.response_format is not None:
            kwargs["response_format"] = dict(request.response_format)
        problem = ""
        for attempt in range(self.backend.max_retries + 1):
            if attempt:
                time.sleep(min(MALFORMED_WAIT_S * 2 ** (attempt - 1), 8.0))
            try:
                raw = self._client.chat.completions.with_raw_response.create(
                    model=self.backend.model,
                    messages=[{"role": m.role, "content": m.content} for m in request.messages],
                    temperature=request.temperature,
                    seed=request.seed,
                    max_tokens=request.max_tokens,
                    **kwargs,
                )
            except openai.APIStatusError as exc:
                raise LLMTransportError(self._status_message(exc)) from None
            except openai.APIConnectionError as exc:
                # the URL the SDK used: --base-url, else $OPENAI_BASE_URL, else OpenAI's own
                where = str(self._client.base_url)
                raise LLMTransportError(
                    f"cannot reach {where} (after {self.backend.max_retries} retries): "
                    f"{scrub(str(exc), self._secrets)}"
                ) from None
            try:
                return parse_completion(raw.text)
            except ValueError as exc:
                problem = str(exc)
        raise LLMTransportError(
            f"{self.backend.name} server sent malformed replies for model "
            f"{self.backend.model!r} ({self.backend.max_retries + 1} attempts): "
            f"{scrub(problem, self._secrets)}"
        )

    def _status_message(self, exc: openai.APIStatusError) -> str:
        """One line for an HTTP error answer; 401/403 name the key variable to check."""
        text = (
            f"{self.backend.name} server at {self._client.base_url} answered HTTP "
            f"{exc.status_code} for model "
            f"{self.backend.model!r} (after up to {self.backend.max_retries} retries): "
            f"{scrub(str(exc.message), self._secrets)}"
        )
        text = " ".join(text.split())
        if exc.status_code in (401, 403):
            variable = self.backend.key_variable
            text += (
                f"; check the key in {variable} (environment or .env): wrong, expired or "
                "without access to this model"
                if variable
                else "; the server refuses requests without a key"
            )
        return text


MALFORMED_WAIT_S = 1.0
"""First wait before asking again after a malformed reply (doubling, at most 8 s)."""
MAX_INT_FIELD = 10**10
"""Largest token count or timestamp (Unix seconds) a reply may hold: a 400-digit integer
would otherwise be stored and crash every reader."""


def parse_completion(body: str) -> ChatResponse:
    """The reply in a chat completion's JSON body; ValueError naming the first bad field."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ValueError(f"the body is not JSON: {body[:60]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("'choices' is empty or not a list of objects")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("'choices[0].message' is not an object")
    text = "" if message.get("content") is None else message["content"]
    if not isinstance(text, str):
        raise ValueError("'choices[0].message.content' is not a string")
    model = data.get("model")
    if not isinstance(model, str) or not model or len(model) > 200:
        raise ValueError("'model' is not a model name")
    finish = choice.get("finish_reason") or ""
    if not isinstance(finish, str) or len(finish) > 50:
        raise ValueError("'choices[0].finish_reason' is not a short string")
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError("'usage' is not an object")
    counts = (_count(usage.get(k, 0), f"usage.{k}") for k in ("prompt_tokens", "completion_tokens"))
    return ChatResponse(
        text=text,
        model=model,
        usage=Usage(*counts),
        finish_reason=finish,
        created=_count(data.get("created"), "created"),
    )


def _count(value: Any, name: str) -> int:
    """A non-negative integer of at most `MAX_INT_FIELD`; ValueError otherwise."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value <= MAX_INT_FIELD:
        raise ValueError(f"{name!r} is not a whole number in [0, {MAX_INT_FIELD:.0e}]")
    return value


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with each of `secrets` masked, any word sharing four characters in a row
    with one (servers echo keys partly masked: `abcd****wxyz`, `sk-proj-...wxyz`), and
    OpenAI-style `sk-` keys: error texts may echo a key; never pass it on."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, "***")
        grams = {secret[i : i + 4] for i in range(len(secret) - 3)} if len(secret) >= 8 else set()
        if grams:
            text = " ".join(
                "***" if any(g in word for g in grams) else word for word in text.split(" ")
            )
    return _SECRET.sub("sk-***", text)


def configured_keys(env_file: Path = Path(".env")) -> tuple[str, ...]:
    """Every LLM key this machine has configured (environment or `env_file`), to scrub
    from anything written to disk, such as a failed job's reason in runs.json."""
    keys = []
    for variable in (KEY_VARIABLE, COMPATIBLE_KEY_VARIABLE):
        with contextlib.suppress(Exception):  # an unreadable .env scrubs nothing more
            keys.append(api_key(env_file, variable, required=False))
    return tuple(key for key in keys if key)
