"""Response cache: one JSON file per request, named by the sha256 of the request.

Modes of `CachedLLM`: ``replay`` (the pipeline's default) answers from the cache, a miss
raising `CacheMissError` with the command that records it, and never builds a client;
``record`` calls the backend and stores, refusing a different reply already stored under
the same key (`CacheIntegrityError`: delete the file to re-record on purpose); ``fill``
replays what is cached and records the rest; ``live`` calls and stores nothing.

Replay matches a request (`MATCHES`, docs/llm.md "Replay modes") by ``slot`` (the
default): the exactly recorded request first, else the reply recorded for the call's
protocol slot (`envgen.llm.slots`) when the two differ only in feedback numbers, the
drift reported on the response, so that replies recorded on one machine replay on
another whose floats differ; or ``strict``: the exact request only (same-machine audits).

Every file is checked when read: its request must hash to its name. It lists its slots
in ``slots`` (a slot belongs to at most one file; only requests that carry feedback get
one) and, if a local server started here wrote it, that server (``server``, not keyed).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from envgen import json_input
from envgen.errors import CacheIntegrityError, CacheMissError, ConfigError, EnvGenError
from envgen.files import remove_stale_temporaries, write_json_atomic
from envgen.llm.accounting import Ledger
from envgen.llm.budget import Budget
from envgen.llm.client import BackendConfig, OpenAIChat
from envgen.llm.entry import check_entry, model_matches
from envgen.llm.planned_calls import record_command
from envgen.llm.request import (
    ChatRequest,
    ChatResponse,
    LLMCallable,
    Usage,
    record_key,
    request_record,
)
from envgen.llm.slots import NO_DRIFT, SlotMismatchError, carries_feedback, compare, slot_id
from envgen.store.manifest import read_run_bytes
from envgen.store.run_dir import RunDir

MODES = ("replay", "record", "fill", "live")
MATCHES = ("slot", "strict")
DEFAULT_CACHE_DIR = Path("data/llm_cache")
FILE_FORMAT = 1
STORED_REPLY_FIELDS = ("text", "model", "usage", "finish_reason", "created")


class ResponseCache:
    """The cache directory: verified reads, atomic writes that never overwrite."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._slots: dict[tuple[str, str], str] | None = None

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The verified entry for `key`, or None if there is none."""
        path = self.path(key)
        return _verified(path) if path.is_file() else None

    def store(self, key: str, entry: dict[str, Any]) -> None:
        """Write `entry` under `key` unless a different reply is already there."""
        try:
            check_entry(entry)
        except ValueError as exc:
            raise CacheIntegrityError(
                f"{self.path(key)}: reply not stored ({exc}); the server's answer is malformed"
            ) from None
        remove_stale_temporaries(self.directory)  # a killed writer's leftovers
        existing = self.load(key)
        if existing is not None:
            if existing["response"]["text"] != entry["response"]["text"]:
                raise CacheIntegrityError(
                    f"{self.path(key)} already holds a different reply to the same request "
                    f"(call {existing.get('label', '?')!r}); not overwriting. Delete the file "
                    "first to replace the recorded reply on purpose."
                )
            return
        write_json_atomic(self.path(key), entry)
        for slot in entry.get("slots", []):
            self.claim_slot(key, entry["request"]["model"], slot)

    def slot_key(self, model: str, slot: str) -> str | None:
        """The key of the file that holds `slot` for `model`, or None."""
        if self._slots is None:
            self._slots = {}
            for key, entry in self.entries():
                for s in entry.get("slots", []):
                    self._slots[(entry["request"]["model"], s)] = key
        return self._slots.get((model, slot))

    def claim_slot(self, key: str, model: str, slot: str) -> None:
        """List `slot` in the file `key`, removing it from the file that held it before."""
        previous = self.slot_key(model, slot)
        if previous == key and slot in (self.load(key) or {}).get("slots", []):
            return
        if previous is not None and previous != key:
            old = self.load(previous)
            if old is not None:
                old["slots"] = [s for s in old.get("slots", []) if s != slot]
                write_json_atomic(self.path(previous), old)
        entry = self.load(key)
        if entry is None:
            raise CacheIntegrityError(f"{self.path(key)}: missing; cannot file slot {slot}")
        if slot not in entry.get("slots", []):
            entry["slots"] = sorted([*entry.get("slots", []), slot])
            write_json_atomic(self.path(key), entry)
        assert self._slots is not None
        self._slots[(model, slot)] = key

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
        match: str = "slot",
        budget: Budget | None = None,
    ):
        if mode not in MODES:
            raise ConfigError("llm_mode", f"{mode!r} unknown; use one of {', '.join(MODES)}")
        if match not in MATCHES:
            raise ConfigError("replay", f"{match!r} unknown; use one of {', '.join(MATCHES)}")
        self.mode = mode
        self.match = match
        self.cache = ResponseCache(cache_dir)
        self.backend = backend
        self.ledger = Ledger()
        self._client_factory = client_factory
        self._client: LLMCallable | None = None
        self.budget = budget
        """Spending cap checked before every live call (envgen.llm.budget)."""

    def __call__(self, request: ChatRequest) -> ChatResponse:
        model = self.backend.model
        record = request_record(request, model)
        key = record_key(record)
        feedback = carries_feedback(record["messages"])
        slot = slot_id(request.run, request.label) if request.run and feedback else None
        if self.mode in ("replay", "fill"):
            entry = self.cache.load(key)
            if entry is not None:
                if slot and self.mode == "fill":
                    self.cache.claim_slot(key, model, slot)
                drift = compare(entry["request"], record, slot or key) if feedback else None
                return self._count(request, _response(entry, "exact", drift))
            slot_key = self.cache.slot_key(model, slot) if slot and self.match == "slot" else None
            if slot_key is not None:
                recorded = self.cache.load(slot_key)
                assert recorded is not None and slot is not None
                try:
                    drift = compare(recorded["request"], record, slot)
                    return self._count(request, _response(recorded, "slot", drift))
                except SlotMismatchError as exc:
                    if self.mode == "replay":
                        raise SlotMismatchError(f"{exc}. {self._how_to_record(request)}") from None
            if self.mode == "replay":
                raise CacheMissError(self._miss_message(request, key, slot))
        if self.budget is not None:
            entries = [entry for _, entry in self.cache.entries()]
            self.budget.check(request.label, record, entries)
        started = time.monotonic()
        if self._client is None:
            self._client = self._client_factory(self.backend)
        response = self._client(request)
        _check_model(response, model, self.backend.name)
        if self.mode != "live":
            reply = dataclasses.asdict(response)
            self.cache.store(
                key,
                {
                    "format": FILE_FORMAT,
                    "key": key,
                    "label": request.label,
                    "backend": self.backend.name,
                    **({"server": self.backend.server} if self.backend.server else {}),
                    **({"slots": [slot]} if slot else {}),
                    "request": record,
                    "response": {f: reply[f] for f in STORED_REPLY_FIELDS},
                    "elapsed_s": round(time.monotonic() - started, 3),
                    "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
        drift = dataclasses.asdict(NO_DRIFT) if feedback else None
        return self._count(request, dataclasses.replace(response, served="live", drift=drift))

    def _count(self, request: ChatRequest, response: ChatResponse) -> ChatResponse:
        self.ledger.add(self.backend.model, response, reask=request.reask)
        return response

    def _record_backends(self) -> list[BackendConfig]:
        """The backends a miss's advice names, the one to try first first: replaying
        another model than the local ones (keyed through the openai preset) names a
        compatible server before OpenAI's, whose models are only some of those."""
        if self.mode != "replay" or self.backend.name != "openai":
            return [self.backend]
        compatible = dataclasses.replace(self.backend, name="compatible", base_url=None)
        return [compatible, self.backend]

    def _how_to_record(self, request: ChatRequest) -> str:
        backends = self._record_backends()
        commands = [record_command(request, backend) for backend in backends]
        if all(commands):
            if self.cache.directory.resolve() != DEFAULT_CACHE_DIR.resolve():
                commands = [f"{c} --cache-dir {self.cache.directory}" for c in commands]
            return "Record it with:\n  " + "\n  or, for OpenAI's models: ".join(
                str(c) for c in commands
            )
        flags = " (or, for OpenAI's models, ".join(f"`{b.record_flags()}`" for b in backends)
        return (
            "Record it by re-running the step that makes this call with LLM mode 'fill' "
            f"and backend options {flags}{')' if len(backends) > 1 else ''}."
        )

    def _miss_message(self, request: ChatRequest, key: str, slot: str | None) -> str:
        where = f"slot {slot}, " if slot else ""
        strict = (
            " (strict replay: the reply recorded for its slot is not used)"
            if slot and self.match == "strict" and self.cache.slot_key(self.backend.model, slot)
            else ""
        )
        return (
            f"no recorded reply for model {self.backend.model!r}, call "
            f"{request.label or '(unlabelled)'!r}, {where}request key {key} in "
            f"{self.cache.directory}{strict} (replay mode never calls the network). "
            f"{self._how_to_record(request)}"
        )


def _run_calls(runs_roots: Iterable[Path]) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """(call log path, run id, call) for every call of every sealed run under `runs_roots`."""
    for root in runs_roots:
        for run in RunDir.under(root):
            calls_path = run.llm_calls
            if not run.finished or not calls_path.is_file():
                continue
            for call in json_input.loads(read_run_bytes(calls_path), calls_path):
                yield calls_path, run.run_id, call


def file_run_slots(cache: ResponseCache, runs_roots: Iterable[Path]) -> int:
    """List in `cache` the slots of the feedback-carrying calls of every finished run under
    `runs_roots`; returns how many. A call without its cache file is an error unless it
    was served by slot and its slot is filed (only the slot's reply was recorded)."""
    filed = 0
    for calls_path, run, call in _run_calls(runs_roots):
        slot = slot_id(run, call["label"])
        entry = cache.load(call["key"])
        if entry is None and call.get("served") == "slot":
            if cache.slot_key(call.get("model", ""), slot) is not None:
                continue  # served by the file that holds its slot: nothing to file
        if entry is None:
            raise CacheIntegrityError(
                f"{calls_path}: call {call['label']!r} has no file {call['key']}.json "
                f"in {cache.directory}"
            )
        if carries_feedback(entry["request"]["messages"]):
            cache.claim_slot(call["key"], entry["request"]["model"], slot)
            filed += 1
    return filed


def unfiled_slots(cache: ResponseCache, runs_roots: Iterable[Path]) -> tuple[int, list[str]]:
    """(feedback calls counted, one line per call whose slot `cache` does not list) over
    the sealed runs under `runs_roots`: such a call replays only where its feedback
    numbers repeat bit for bit (`envgen llm slots` files them)."""
    counted, missing = 0, []
    for calls_path, run, call in _run_calls(runs_roots):
        entry = cache.load(call["key"])
        if entry is None and call.get("served") != "slot":
            missing.append(f"{calls_path.parent}: call {call['label']} has no cache file")
            continue
        if entry is not None and not carries_feedback(entry["request"]["messages"]):
            continue
        counted += 1
        model = entry["request"]["model"] if entry is not None else call.get("model", "")
        slot = slot_id(run, call["label"])
        if cache.slot_key(model, slot) is None:
            missing.append(f"{calls_path.parent}: call {call['label']} (slot {slot})")
    return counted, missing


def slots_verdict(cache_dir: Path, runs_roots: Iterable[Path]) -> tuple[bool, str]:
    """`envgen verify`'s line on slots: (every feedback call's slot filed?, detail naming
    the first run and call without one, and the command that files it)."""
    try:
        counted, missing = unfiled_slots(ResponseCache(cache_dir), runs_roots)
    except EnvGenError as exc:
        return False, str(exc)
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        roots = " ".join(f"--runs-root {r}" for r in runs_roots)
        return False, (
            f"{missing[0]} is not filed in {cache_dir}{more}: on a machine whose floats "
            f"differ it reads not_recorded. File them: envgen llm slots {roots} "
            f"--cache-dir {cache_dir}"
        )
    return True, f"all {counted} feedback calls of the sealed runs have their slot filed"


def _check_model(response: ChatResponse, model: str, backend: str) -> None:
    """Refuse a reply written by another model than the one it would be stored under
    (a more specific version is the same model: `model_matches`)."""
    if not model_matches(response.model, model):
        raise CacheIntegrityError(
            f"backend {backend!r} answered with model {response.model!r}, not the requested "
            f"{model!r}; the reply is not stored (a cache entry names the model that wrote "
            "it). Use a backend that serves the requested model."
        )


def _verified(path: Path) -> dict[str, Any]:
    """The entry in `path`, every field checked (`envgen.llm.entry`) and its request
    hashing to the file's name; one-line `CacheIntegrityError` naming the file otherwise."""
    try:
        entry = json_input.read(path)
    except json_input.JSONInputError as exc:
        raise CacheIntegrityError(
            f"{path}: unreadable cache file ({exc.detail}); delete it"
        ) from None
    try:
        check_entry(entry)
    except ValueError as exc:
        raise CacheIntegrityError(
            f"{path}: unreadable cache file ({exc}); delete it and record the call again"
        ) from None
    actual = record_key(entry["request"])
    if actual != path.stem or entry["key"] != path.stem:
        raise CacheIntegrityError(
            f"{path}: its request hashes to {actual}, not to its name; the file was edited "
            "or renamed. Delete it and record the call again."
        )
    return entry


def _response(entry: dict[str, Any], served: str, drift: Any) -> ChatResponse:
    reply = entry["response"]
    usage = reply.get("usage", {})
    return ChatResponse(
        text=reply["text"],
        model=reply.get("model", ""),
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        finish_reason=reply.get("finish_reason", ""),
        created=int(reply.get("created", 0)),
        cached=True,
        served=served,
        drift=dataclasses.asdict(drift) if drift is not None else None,
    )
