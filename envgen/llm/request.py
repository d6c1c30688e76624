"""What one chat call sends and gets back, and the cache key of a request.

A `ChatRequest` holds everything that determines the reply but the model, which the
backend supplies; `request_record` adds it and the endpoint kind, and is exactly what
the cache hashes and stores. It never holds credentials.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

ENDPOINT = "chat.completions"


@dataclasses.dataclass(frozen=True)
class Message:
    """One conversation turn: its role ("system", "user" or "assistant") and text."""

    role: str
    content: str


@dataclasses.dataclass(frozen=True)
class ChatRequest:
    """A chat completion request, minus the model (the backend names it)."""

    messages: tuple[Message, ...]
    """The whole conversation so far, last turn the user's."""
    temperature: float
    """Sampling temperature; the paper uses 0."""
    seed: int
    """Request seed; the designer passes the initial-set index here."""
    max_tokens: int
    """Upper bound on reply tokens (keeps cost and runtime bounded)."""
    response_format: Mapping[str, Any] | None = None
    """Structured-output request sent as is, or None for free text."""
    label: str = ""
    """Human-readable name of the call (e.g. ``crafter/initial/n4/set0``)."""
    reask: bool = False
    """True when this call re-asks after an unusable reply."""
    run: str = ""
    """The run that makes the call, ``<config hash>/seed-<n>`` (`envgen.llm.slots.run_id`),
    which with `label` names the call's protocol slot; empty outside runs (planned calls,
    whose requests carry no feedback). `label`, `reask` and `run` are not in the key."""


@dataclasses.dataclass(frozen=True)
class Usage:
    """Token counts the server reported for one call: the request's and the reply's."""

    prompt_tokens: int
    completion_tokens: int


@dataclasses.dataclass(frozen=True)
class ChatResponse:
    """A reply, live or replayed from the cache."""

    text: str
    """The assistant message's content."""
    model: str
    """The model id the server returned (may be more specific than the one requested)."""
    usage: Usage
    """Token counts as recorded."""
    finish_reason: str
    """"stop", or "length" when `max_tokens` cut the reply."""
    created: int
    """Server timestamp of the completion (Unix seconds)."""
    cached: bool = False
    """True when the reply came from the response cache."""
    served: str = "live"
    """How it was obtained: "exact" (the same request was recorded), "slot" (the reply
    recorded for this call's slot, whose feedback numbers differ) or "live"."""
    drift: dict[str, Any] | None = None
    """For calls that carry feedback: `envgen.llm.slots.Drift` (as a dict) against the
    recorded request (zero when exact); None otherwise."""


# The callable every backend implements: one request in, one reply out.
LLMCallable = Callable[[ChatRequest], ChatResponse]


def request_record(request: ChatRequest, model: str) -> dict[str, Any]:
    """The canonical request: every field that determines the reply, nothing else."""
    return {
        "endpoint": ENDPOINT,
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": request.temperature,
        "seed": request.seed,
        "max_tokens": request.max_tokens,
        "response_format": request.response_format,
    }


def record_key(record: Mapping[str, Any]) -> str:
    """sha256 hex digest of a request record as canonical JSON (sorted keys, no
    whitespace, UTF-8 kept: the same record always gives the same text)."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
