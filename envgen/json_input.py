"""Reading JSON that someone else may have written: bounded in size and nesting.

Any JSON file the package reads can come from another machine or person. `json.loads` of
200 KB of `[[[...]]]` raises `RecursionError` (and code that walks the result recurses as
deep), a file of gigabytes fills the memory: `loads` refuses both before parsing, in one
line naming the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from envgen.errors import InputError
from envgen.files import read_bounded, too_large

MAX_BYTES = 64 * 2**20
"""Largest JSON file read: 64 MiB (a runs.json of the paper profile is under 1 MiB, a
Crafter run's manifest a few KB)."""
MAX_DEPTH = 32
"""Deepest nesting of arrays and objects (the package's files nest at most 6 deep)."""

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


class JSONInputError(InputError):
    """A JSON file that is too large, too deep, or not JSON."""


def nesting_depth(data: bytes) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', data)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads(data: bytes | str, where: object, max_bytes: int = MAX_BYTES) -> Any:
    """The value of JSON text `data` read from `where` (named in the errors)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise JSONInputError(where, too_large(len(raw), max_bytes, "JSON"))
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise JSONInputError(
            where,
            f"arrays and objects nest {depth} deep, more than {MAX_DEPTH}; it is not a file "
            "this package wrote",
        )
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise JSONInputError(where, f"not JSON ({str(exc)[:200]})") from None


def read(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON value of the file `path` (its size checked before it is read)."""
    data = read_bounded(path, max_bytes, JSONInputError, "JSON")
    return loads(data, path, max_bytes)
