"""Response cache: one JSON file per request, named by the sha256 of the request.

Modes of `CachedLLM`:
- ``replay`` (the pipeline's default): answer from the cache; a miss raises
  `CacheMissError` with the command that records it. No client is ever built.
- ``record``: call the backend and store; a different reply already stored under the
  same key raises `CacheIntegrityError` (delete the file to re-record on purpose).
- ``fill``: replay what is cached, call and store what is not (for recording the
  adaptation calls of a run whose initial calls are already committed).
- ``live``: call the backend, store nothing.
Every file is checked when read: its request must hash to its name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envgen.errors import CacheIntegrityError, CacheMissError, ConfigError
from envgen.files import write_json_atomic
from envgen.llm.accounting import Ledger
from envgen.llm.client import BackendConfig, OpenAIChat
from envgen.llm.plan import record_command as planned_record_command
from envgen.llm.request import (
    ChatRequest,
    ChatResponse,
    LLMCallable,
    Usage,
    record_key,
    request_record,
)

MODES = ("replay", "record", "fill", "live")
DEFAULT_CACHE_DIR = Path("data/llm_cache")
FILE_FORMAT = 1


class ResponseCache:
    """The cache directory: verified reads, atomic writes that never overwrite."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The verified entry for `key`, or None if there is none."""
        path = self.path(key)
        return _verified(path) if path.is_file() else None

    def store(self, key: str, entry: dict[str, Any]) -> Path:
        """Write `entry` under `key` unless a different reply is already there."""
        existing = self.load(key)
        if existing is not None:
            if existing["response"]["text"] != entry["response"]["text"]:
                raise CacheIntegrityError(
                    f"{self.path(key)} already holds a different reply to the same request "
                    f"(call {existing.get('label', '?')!r}); not overwriting. Delete the file "
                    "first to replace the recorded reply on purpose."
                )
            return self.path(key)
        write_json_atomic(self.path(key), entry)
        return self.path(key)

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, verified entry) for every file, sorted by name."""
        for path in sorted(self.directory.glob("*.json")):
            yield path.stem, _verified(path)


class CachedLLM:
    """An `LLMCallable` that answers from and/or records into a `ResponseCache`."""

    def __init__(
        self,
        mode: str,
        cache_dir: Path,
        backend: BackendConfig,
        *,
        client_factory: Callable[[BackendConfig], LLMCallable] = OpenAIChat,
        record_command: Callable[[str, BackendConfig], str | None] = planned_record_command,
    ):
        if mode not in MODES:
            raise ConfigError("llm_mode", f"{mode!r} unknown; use one of {', '.join(MODES)}")
        self.mode = mode
        self.cache = ResponseCache(cache_dir)
        self.backend = backend
        self.ledger = Ledger()
        self._client_factory = client_factory
        self._client: LLMCallable | None = None
        self._record_command = record_command

    def __call__(self, request: ChatRequest) -> ChatResponse:
        record = request_record(request, self.backend.model)
        key = record_key(record)
        if self.mode in ("replay", "fill"):
            entry = self.cache.load(key)
            if entry is not None:
                return self._count(request, _response(entry))
            if self.mode == "replay":
                raise CacheMissError(self._miss_message(request, key))
        started = time.monotonic()
        response = self._live()(request)
        if self.mode != "live":
            self.cache.store(
                key,
                {
                    "format": FILE_FORMAT,
                    "key": key,
                    "label": request.label,
                    "backend": self.backend.name,
                    "request": record,
                    "response": {
                        "text": response.text,
                        "model": response.model,
                        "usage": {
                            "prompt_tokens": response.usage.prompt_tokens,
                            "completion_tokens": response.usage.completion_tokens,
                        },
                        "finish_reason": response.finish_reason,
                        "created": response.created,
                    },
                    "elapsed_s": round(time.monotonic() - started, 3),
                    "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
        return self._count(request, response)

    def _live(self) -> LLMCallable:
        if self._client is None:
            self._client = self._client_factory(self.backend)
        return self._client

    def _count(self, request: ChatRequest, response: ChatResponse) -> ChatResponse:
        self.ledger.add(self.backend.model, response, reask=request.reask)
        return response

    def _miss_message(self, request: ChatRequest, key: str) -> str:
        command = self._record_command(request.label, self.backend)
        if command and self.cache.directory.resolve() != DEFAULT_CACHE_DIR.resolve():
            command += f" --cache-dir {self.cache.directory}"
        how = (
            f"Record it with:\n  {command}"
            if command
            else "Record it by re-running the step that makes this call with LLM mode 'fill' "
            f"and backend options `{self.backend.record_flags()}`."
        )
        return (
            f"no recorded reply for model {self.backend.model!r}, call "
            f"{request.label or '(unlabelled)'!r}, request key {key} in {self.cache.directory} "
            f"(replay mode never calls the network). {how}"
        )


def _verified(path: Path) -> dict[str, Any]:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        request = entry["request"]
        stored_key = entry["key"]
        entry["response"]["text"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CacheIntegrityError(f"{path}: unreadable cache file ({exc}); delete it") from None
    actual = record_key(request)
    if actual != path.stem or stored_key != path.stem:
        raise CacheIntegrityError(
            f"{path}: its request hashes to {actual}, not to its name; the file was edited "
            "or renamed. Delete it and record the call again."
        )
    return entry


def _response(entry: dict[str, Any]) -> ChatResponse:
    reply = entry["response"]
    usage = reply.get("usage", {})
    return ChatResponse(
        text=reply["text"],
        model=reply.get("model", ""),
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        finish_reason=reply.get("finish_reason", ""),
        created=int(reply.get("created", 0)),
        cached=True,
    )
