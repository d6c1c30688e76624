"""What a response-cache file may hold: every field's type and range, checked before a
reply is stored and whenever a file is read.

The cache is committed and shared: a hostile or damaged entry (a 400-digit token count,
usage as a list) would pass the request-hash check, then crash replay, `envgen llm show`
or the accounting. `check_entry` raises `ValueError` naming the first bad field, and
refuses a backend that cannot have served the entry's model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from envgen.input_checks import MAX_TEMPERATURE
from envgen.llm.client import BACKENDS, LOCAL_MODELS, MAX_INT_FIELD

ROLES = ("system", "user", "assistant")
MAX_TEXT = 2_000_000
"""Longest message or reply text, in characters (a whole conversation fits many times)."""
MAX_NAME = 200
"""Longest model name, label, finish reason or timestamp."""
_KEY = re.compile(r"[0-9a-f]{64}")
_DATE_SUFFIX = re.compile(r"\d{4}(-preview)?|\d{4}-\d{2}-\d{2}")


def model_matches(answered: str, requested: str) -> bool:
    """True when `answered` names `requested` or a dated version of it: a date-like
    suffix only (`gpt-4-1106-preview`, `gpt-3.5-turbo-0125`, `gpt-4o-2024-05-13`), never
    another model that merely starts with the name (`gpt-4-turbo` is not `gpt-4`)."""
    if answered == requested:
        return True
    prefix = requested + "-"
    return answered.startswith(prefix) and bool(_DATE_SUFFIX.fullmatch(answered[len(prefix) :]))


def check_entry(entry: Any) -> None:
    """ValueError naming the first field of a cache entry that is missing, of the wrong
    type or out of range, or a backend that cannot have served its model."""
    _mapping(entry, "entry")
    if "format" in entry and type(entry["format"]) is not int:
        raise ValueError("'format' is not an integer")
    key = entry.get("key")
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError("'key' is not a sha256 hex digest")
    for name in ("label", "recorded_at", "server"):
        if name in entry:
            _text(entry[name], name, MAX_NAME)
    backend = entry.get("backend")
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"'backend' {backend!r} is not one of {', '.join(BACKENDS)}")
    if "elapsed_s" in entry:
        _number(entry["elapsed_s"], "elapsed_s", 0.0, 1e7)
    slots = entry.get("slots", [])
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        raise ValueError("'slots' must be a list of strings")
    _request(entry.get("request"))
    _response(entry.get("response"))
    requested = entry["request"]["model"]
    answered = entry["response"]["model"]
    if answered and not model_matches(answered, requested):
        raise ValueError(
            f"a reply written by model {answered!r} is stored under model {requested!r}"
        )
    if (backend == "local") != (requested in LOCAL_MODELS) and backend is not None:
        raise ValueError(
            f"recorded through backend {backend!r} but filed under model {requested!r}: "
            f"only the local backend serves {', '.join(LOCAL_MODELS)}, and it serves nothing else"
        )


def _request(request: Any) -> None:
    _mapping(request, "request")
    _text(request.get("model"), "request.model", MAX_NAME, empty=False)
    _text(request.get("endpoint"), "request.endpoint", MAX_NAME)
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'request.messages' is not a non-empty list")
    for i, message in enumerate(messages):
        _mapping(message, f"request.messages[{i}]")
        if message.get("role") not in ROLES:
            raise ValueError(f"'request.messages[{i}].role' is not one of {', '.join(ROLES)}")
        _text(message.get("content"), f"request.messages[{i}].content", MAX_TEXT)
    _number(request.get("temperature"), "request.temperature", 0.0, MAX_TEMPERATURE)
    _integer(request.get("seed"), "request.seed", -(2**63), 2**63 - 1)
    _integer(request.get("max_tokens"), "request.max_tokens", 1, 10**7)
    if request.get("response_format") is not None:
        _mapping(request["response_format"], "request.response_format")


def _response(response: Any) -> None:
    _mapping(response, "response")
    _text(response.get("text"), "response.text", MAX_TEXT)
    _text(response.get("model", ""), "response.model", MAX_NAME)
    _text(response.get("finish_reason", ""), "response.finish_reason", MAX_NAME)
    usage = response.get("usage", {})
    _mapping(usage, "response.usage")
    for name in ("prompt_tokens", "completion_tokens"):
        _integer(usage.get(name, 0), f"response.usage.{name}", 0, MAX_INT_FIELD)
    _integer(response.get("created", 0), "response.created", 0, MAX_INT_FIELD)


def _mapping(value: Any, name: str) -> None:
    if not isinstance(value, Mapping):
        raise ValueError(f"{name!r} is not an object")


def _text(value: Any, name: str, limit: int, empty: bool = True) -> None:
    if not isinstance(value, str) or len(value) > limit or (not empty and not value):
        raise ValueError(f"{name!r} is not a string of at most {limit:,} characters")


def _integer(value: Any, name: str, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{name!r} is not a whole number in [{low:.3g}, {high:.3g}]")


def _number(value: Any, name: str, low: float, high: float) -> None:
    if type(value) not in (int, float) or not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{name!r} is not a number in [{low}, {high}]")
