"""Coercions shared by every config's `from_dict`: field paths, key spellings, clamping.

Untrusted input (LLM replies, JSON files) goes through these so that every game's config
reports errors alike: a `ConfigError` naming the dotted field path, or a clamped value
with a warning appended to the caller's list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from envgen.errors import ConfigError


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def norm_key(key: Any) -> str:
    return str(key).strip().lower().replace(" ", "_").replace("-", "_")


def json_object(value: Any, where: str) -> Mapping[str, Any]:
    """`value` if it is a JSON object (a mapping); `ConfigError` otherwise."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            where or "<config>", f"expected a JSON object, got {type(value).__name__}"
        )
    return value


def as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    """A settings section: `json_object`, with None as an empty one."""
    return {} if value is None else json_object(value, where)


def one_of(value: Any, allowed: tuple[str, ...], aliases: Mapping[str, str], where: str) -> str:
    """`value` as one of `allowed`, after key normalisation and the LLM spellings in `aliases`."""
    if not isinstance(value, str):
        raise ConfigError(where, f"expected one of {', '.join(allowed)}; got {value!r}")
    norm = norm_key(value)
    norm = aliases.get(norm, norm)
    if norm not in allowed:
        raise ConfigError(where, f"{value!r} is not allowed; allowed values: {', '.join(allowed)}")
    return norm


def int_clamped(value: Any, lo: int, hi: int, where: str, warnings: list[str]) -> int:
    """Coerce to int (bools, numeric strings, whole floats) and clamp to [lo, hi]."""
    if isinstance(value, bool):
        number: float = int(value)
    elif isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = math.nan  # refused below, as an infinite number is
    else:
        raise ConfigError(where, f"expected an integer in [{lo}, {hi}]; got {type(value).__name__}")
    if not math.isfinite(number):
        raise ConfigError(where, f"expected an integer in [{lo}, {hi}]; got {value!r}")
    if number != int(number):
        warnings.append(f"{where}: {value!r} rounded down to {int(number)}")
    result = int(number)
    if result < lo or result > hi:
        clamped = min(max(result, lo), hi)
        warnings.append(f"{where}: {value!r} out of range [{lo}, {hi}], clamped to {clamped}")
        result = clamped
    return result
