"""Hostile or damaged cache files: `envgen llm verify` fails on each, readers (replay,
`envgen llm show`) end in one line naming the file, never a traceback; labels are
printed with control characters escaped."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest

from envgen.cli import main
from envgen.errors import CacheIntegrityError
from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.request import ChatRequest, Message, record_key, request_record

REPO = Path(__file__).resolve().parents[1]
REQUEST = ChatRequest((Message("user", "design 1 environment"),), 0.0, 2, 64)


def _entry(model: str = "gpt-4-1106-preview", backend: str = "openai") -> dict:
    record = request_record(REQUEST, model)
    key = record_key(record)
    return {
        "format": 1,
        "key": key,
        "label": "crafter/initial/n1/set0",
        "backend": backend,
        "request": record,
        "response": {
            "text": "{}",
            "model": model,
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            "finish_reason": "stop",
            "created": 1700000000,
        },
        "elapsed_s": 1.0,
        "recorded_at": "2026-01-01T00:00:00Z",
    }


def _write(cache: Path, entry: dict) -> Path:
    cache.mkdir(exist_ok=True)
    path = cache / f"{entry['key']}.json"
    path.write_text(json.dumps(entry))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`envgen ARGS` in this process (exit code and output as a subprocess would give)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _set(path: str, value):
    def change(entry):
        *parents, last = path.split(".")
        node = entry
        for key in parents:
            node = node[key]
        node[last] = value

    return change


HOSTILE = {
    "400-digit integer": _set("response.usage.prompt_tokens", 10**400),
    "text not a string": _set("response.text", {"a": 1}),
    "usage a list": _set("response.usage", [1, 2]),
    "created a string": _set("response.created", "yesterday"),
    "negative tokens": _set("response.usage.completion_tokens", -4),
    "label not a string": _set("label", ["x"]),
    "slots not strings": _set("slots", [1]),
    "another model's reply": _set("response.model", "gpt-4-evil"),
    "unknown backend": _set("backend", "sneaky"),
}


@pytest.mark.parametrize("damage", list(HOSTILE.values()), ids=list(HOSTILE))
def test_verify_show_and_replay_refuse_hostile_fields(tmp_path, damage):
    cache = tmp_path / "cache"
    entry = _entry()
    damage(entry)
    path = _write(cache, entry)
    before = path.read_bytes()
    for args in (["llm", "verify"], ["llm", "show"], ["llm", "show", entry["key"][:8]]):
        result = _cli(*args, "--cache-dir", str(cache))
        text = result.stdout + result.stderr
        assert result.returncode != 0 and "Traceback" not in text, text
        assert len(text.strip().splitlines()) == 1 and str(path) in text, text
    backend = backend_config("openai")
    with pytest.raises(CacheIntegrityError, match="unreadable cache file"):
        CachedLLM("replay", cache, backend)(REQUEST)
    assert path.read_bytes() == before


def test_local_reply_filed_under_an_api_model_fails_verify(tmp_path):
    cache = tmp_path / "cache"
    path = _write(cache, _entry(backend="local"))
    result = _cli("llm", "verify", "--cache-dir", str(cache))
    assert result.returncode == 1 and str(path) in result.stderr
    assert "only the local backend serves" in result.stderr
    good = tmp_path / "good"
    _write(good, _entry())
    _write(good, _entry(model="smollm2-135m-instruct", backend="local"))
    assert _cli("llm", "verify", "--cache-dir", str(good)).returncode == 0


def test_show_escapes_control_characters_in_labels(tmp_path):
    cache = tmp_path / "cache"
    entry = _entry()
    entry["label"] = "\x1b[2J\x1b[31mred\nsecond line\r"
    _write(cache, entry)
    result = _cli("llm", "show", "--cache-dir", str(cache))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    assert len(result.stdout.strip().splitlines()) == 1 and "\\x1b[31mred\\n" in result.stdout


def test_committed_cache_verifies():
    result = _cli("llm", "verify", "--cache-dir", str(REPO / "data" / "llm_cache"))
    assert result.returncode == 0, result.stderr
