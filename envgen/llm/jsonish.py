"""JSON as LLMs write it: find it in prose and read it leniently.

Tolerated, because models write them: // and /* */ comments, trailing commas,
Python's True/False/None, and single-quoted strings where a JSON string may start.
All scanning is regex-driven (linear time), so a megabyte of text costs milliseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# One alternative per token kind; strings first so that nothing inside them is touched.
_TOKEN = re.compile(
    r"""(?P<dq>"(?:[^"\\]|\\.)*")
      |(?P<sq>'(?:[^'\\\n]|\\.)*')
      |(?P<line>//[^\n]*)
      |(?P<block>/\*.*?(?:\*/|\Z))
      |(?P<word>\b(?:True|False|None)\b)""",
    re.X | re.S,
)
_PY_WORDS = {"True": "true", "False": "false", "None": "null"}
_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])', re.S)
_SPECIAL = re.compile(r'[{}\[\]"]')
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
_CLOSER = {"{": "}", "[": "]"}
_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "n": "\n", "t": "\t"}


class JSONishError(ValueError):
    """Text that is not JSON even after the tolerated repairs."""


def loads(text: str) -> tuple[Any, bool]:
    """Parse JSON or the tolerated near-JSON; returns (value, whether repairs were needed)."""
    try:
        return _strict(text), False
    except JSONishError as strict_error:
        repaired = _repair(text)
        if repaired == text:
            raise strict_error from None
        return _strict(repaired), True


def regions(text: str) -> Iterator[tuple[int, int, bool]]:
    """Top-level {...} / [...] spans as (start, end, complete): quotes count only inside
    a span; a span still open at the end has complete=False (a truncated reply); a
    closing bracket that does not match discards the open span."""
    stack: list[str] = []
    start = 0
    pos = 0
    while (match := _SPECIAL.search(text, pos)) is not None:
        token = match.group()
        pos = match.end()
        if token == '"':
            if stack:
                string = _STRING_BODY.match(text, pos)
                if string is None:  # an unterminated string runs to the end
                    break
                pos = string.end()
        elif token in _CLOSER:
            if not stack:
                start = match.start()
            stack.append(_CLOSER[token])
        elif stack:
            if token != stack.pop():
                stack.clear()
            elif not stack:
                yield start, pos, True
    if stack:
        yield start, len(text), False


def _strict(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONishError(
            f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise JSONishError("JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal with more than 4300 digits
        raise JSONishError(f"not valid JSON ({exc})") from None


def _repair(text: str) -> str:
    pieces: list[str] = []
    last = 0
    before = "{"  # last non-blank character written: decides if a ' starts a string
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        gap = text[last : match.start()]
        pieces.append(gap)
        before = gap.rstrip()[-1:] or before
        last = match.end()
        token = match.group()
        if kind in ("line", "block"):
            pieces.append(" ")
            continue
        if kind == "word":
            token = _PY_WORDS[token]
        elif kind == "sq" and before in "[{:,":
            token = json.dumps(_unescape_single(token[1:-1]))
        pieces.append(token)
        before = token[-1]
    pieces.append(text[last:])
    return _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), "".join(pieces))


def _unescape_single(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)
