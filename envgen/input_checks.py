"""Input checks shared by every entry point: YAML files, typed fields, CLI numbers.

A user's mistake (a quoted number, a YAML typo, a path to a directory) ends in one line
naming the file, the field and the fix, before any work starts: YAML and `dataclasses`
accept any value for any field (`n_cycles: 2.5` would train, `obfuscated: "false"` be true).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import os
import re
import sys
import types
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, NoReturn

from envgen.errors import ConfigError
from envgen.files import too_large
from envgen.yaml_input import MAX_BYTES as MAX_YAML_BYTES
from envgen.yaml_input import YAMLInputError, loads_mapping


# --- files -------------------------------------------------------------------------------
def read_yaml_mapping(path: Path | str, what: str) -> dict[str, Any]:
    """The mapping in the YAML file `path` (`what` it should hold, for the messages); any
    file that is not one (`envgen.yaml_input`) is a `ConfigError` naming it."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_YAML_BYTES:  # before reading it
        raise ConfigError("", too_large(path.stat().st_size, MAX_YAML_BYTES, "YAML"), file=path)
    text = read_text(path, what)
    try:
        return loads_mapping(text, path, what)
    except YAMLInputError as exc:
        raise ConfigError("", exc.detail, file=path) from None


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of `path`, or a `ConfigError` saying why it cannot be read."""
    if path.is_dir():
        raise ConfigError("", f"is a directory; give the path of {what}", file=path)
    if not path.exists():
        raise ConfigError("", f"no such file; give the path of {what}", file=path)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot be read ({exc}); give {what}", file=path) from None


def existing_dir(path: Path, what: str) -> Path:
    """`path` if it is a directory, else a `ConfigError` naming it."""
    if not path.exists():
        raise ConfigError("", f"no such directory; give the directory of {what}", file=path)
    return not_a_file(path, what)


def not_a_file(path: Path, what: str) -> Path:
    """`path` unless a file stands where a directory is wanted (a `ConfigError` naming it);
    a missing or read-only one is the caller's to judge (a replayed cache may be read-only)."""
    if path.exists() and not path.is_dir():
        raise ConfigError("", f"is a file; give the directory of {what}", file=path)
    return path


def writable_dir(path: Path, what: str) -> Path:
    """`path` if it is a directory or can be made one, else a `ConfigError` naming the file
    in the way or the folder that is not writable (a traceback once the work has started)."""
    for place in (path, *path.parents):
        if not (place.exists() or place.is_symlink()):
            continue
        where = "" if place == path else f"{place} "
        if not place.is_dir():
            raise ConfigError("", f"{where}is a file; give a directory for {what}", file=path)
        if not os.access(place, os.W_OK | os.X_OK):  # read-only: a PermissionError later
            fix = f"make it writable or give another directory for {what}"
            raise ConfigError("", f"{where}is not writable; {fix}", file=path)
        return path
    return path


# --- typed fields ------------------------------------------------------------------------
def check_types(cls: type, data: Mapping[str, Any], prefix: str = "") -> None:
    """Raise a `ConfigError` for the first value of `data` whose type does not match the
    annotation of the dataclass field of that name (`prefix` + name in the message), or
    is not finite. Keys that are not fields are left to the caller."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for name, value in data.items():
        if name not in names:
            continue
        if not _matches(value, hints[name]):
            raise ConfigError(f"{prefix}{name}", f"{value!r} is not {describe(hints[name])}")
        finite(value, f"{prefix}{name}")


def check_fields(
    cls: type, data: Mapping[str, Any], prefix: str = "", skip: str = "", what: str = "key"
) -> None:
    """`check_types`, after a `ConfigError` naming the nearest field for the first key of
    `data` that is no field of `cls` (nor one of the space-separated `skip` fields)."""
    names = {f.name for f in dataclasses.fields(cls)} - set(skip.split())
    unknown = sorted(set(data) - names, key=str)
    if unknown:
        raise unknown_key(f"{prefix}{unknown[0]}", unknown[0], names, what)
    check_types(cls, data, prefix)


_SCALARS: dict[type, tuple[type | tuple[type, ...], str]] = {
    bool: (bool, "true or false (unquoted)"),
    int: (int, "a whole number (unquoted, no decimals, e.g. 4)"),
    float: ((int, float), "a number (unquoted, e.g. 0.5)"),
    str: (str, "a string"),
}
"""Scalar annotation -> the YAML values it takes (a bool is no number) and how they look."""


def _matches(value: Any, hint: Any) -> bool:
    """Whether a YAML-loaded `value` is acceptable for a field annotated `hint`."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return True
    if hint in _SCALARS:
        takes = _SCALARS[hint][0]
        return isinstance(value, takes) and (hint is bool or not isinstance(value, bool))
    if hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in args)
    if origin is tuple:
        if args and typing.get_origin(args[0]) is tuple:  # (name, value) pairs: a mapping
            return value is None or isinstance(value, Mapping | tuple)
        if not isinstance(value, list | tuple):
            return False
        element = args[0] if args else Any
        return all(_matches(item, element) for item in value)
    return True  # a type these configs do not use: left to the dataclass


def describe(hint: Any) -> str:
    """What a value of type `hint` looks like in YAML, for error messages."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint in _SCALARS:
        return _SCALARS[hint][1]
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else describe(a) for a in args)
    if origin is tuple:
        if args and typing.get_origin(args[0]) is tuple:
            return "a mapping of name: value (e.g. {num_envs: 8})"
        if args and args[0] is int:
            return "a list of whole numbers (e.g. [0, 1])"
        return "a list"
    return str(hint)


MAX_TEMPERATURE = 2.0  # the OpenAI API's bound, which llama.cpp's server shares


def check_temperature(value: float, where: str) -> None:
    """A `ConfigError` unless `value` is a sampling temperature the APIs accept."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(where, f"{value!r} is not a number; give one in 0..{MAX_TEMPERATURE:g}")
    if not 0.0 <= value <= MAX_TEMPERATURE:  # also false for NaN
        raise ConfigError(where, f"{value!r} is outside 0..{MAX_TEMPERATURE:g} (paper: 0)")


def finite(value: Any, where: str) -> None:
    """A `ConfigError` when a number (or a number in a list) is NaN or infinite (YAML's
    `.nan`, `.inf`): every comparison with NaN is false, so range checks let it through."""
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(where, f"{item!r} is not a finite number; give a plain number")


def unknown_key(
    where: str, key: object, allowed: Collection[str], what: str = "key"
) -> ConfigError:
    """The error for an unknown `key` at `where`: the nearest allowed name, then all."""
    close = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`? " if close else ""
    return ConfigError(where, f"unknown {what}; {hint}allowed: {', '.join(sorted(allowed))}")


# --- names that become paths --------------------------------------------------------------
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def safe_name(value: Any, where: str) -> str:
    """`value` if it can be a file name as is (1-64 letters, digits, `-` or `_`), else a
    `ConfigError`: a table id such as `../../x` would write outside the output directory."""
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        raise ConfigError(
            where, f"{value!r} is not a name: use 1-64 letters, digits, - or _ (e.g. table1)"
        )
    return value


# --- sizes -------------------------------------------------------------------------------
MAX_STEPS = 10**10
"""Most env steps one run or phase may ask for: 5,000 times the paper's 1.96M-step run;
its episode log alone would pass tens of GB (one line per episode)."""
MAX_MEMORY_BYTES = 64 * 2**30
"""Most memory a run's rollout may need by `rollout_memory_bytes` (the paper's 8 x 512
rollout: about 50 MB; Heist's 64 x 256: about 0.2 GB)."""
MAX_COUNT = 10**6
"""Most episodes, evaluations or other repetitions one setting may ask for."""


def rollout_memory_bytes(num_envs: int, num_steps: int) -> int:
    """Estimated memory of one rollout: per transition the 64x64 RGB observation and the
    float scalars, per running env 1 MiB (its world, objects and buffers, rounded up)."""
    return num_envs * num_steps * (64 * 64 * 3 + 32) + num_envs * 2**20


def at_most(value: int | float, limit: int | float, where: str, why: str) -> None:
    """A `ConfigError` at `where` when `value` exceeds `limit`; `why` says what it costs."""
    if value > limit:
        raise ConfigError(where, f"{value:,} is more than {limit:,} ({why})")


# --- command lines -----------------------------------------------------------------------
class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line naming the option and `--help`."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def comma_list(
    item: typing.Callable[[str], Any],
    usage: str,
    *,
    least: int = 1,
    distinct: bool = False,
    allowed: typing.Callable[[Any], bool] = lambda _: True,
) -> typing.Callable[[str], tuple[Any, ...]]:
    """An argparse `type` for a comma-separated list ("1,2,4" -> (1, 2, 4)) of at least
    `least` parts, each read by `item` and `allowed`; any mistake is "'TEXT': `usage`"."""

    def parse(text: str) -> tuple[Any, ...]:
        try:
            items = tuple(item(part) for part in text.split(","))
        except ValueError:
            items = ()
        if (
            len(items) < max(least, 1)
            or not all(allowed(i) for i in items)
            or (distinct and len(set(items)) != len(items))
        ):
            raise argparse.ArgumentTypeError(f"{text!r}: {usage}")
        return items

    return parse


def whole_number(minimum: int) -> typing.Callable[[str], int]:
    """An argparse `type` accepting integers >= `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {minimum}")
        return value

    parse.__name__ = "whole number"
    return parse


def number_in(low: float, high: float) -> typing.Callable[[str], float]:
    """An argparse `type` accepting finite numbers in (`low`, `high`] (`float` parses "nan",
    which passes every range check)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if not low < value <= high:
            bound = f"must be > {low:g}" if high == math.inf else f"is outside ({low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"{text} {bound}")
        return value

    parse.__name__ = "number"
    return parse


positive_number = number_in(0, math.inf)
"""An argparse `type` accepting finite numbers > 0 (`inf` would time forever)."""


def torch_device(text: str) -> str:
    """An argparse `type` accepting a torch device this machine has (cpu, cuda, cuda:1);
    "cpu", every command's default, is answered without importing torch."""
    if text == "cpu":
        return text
    import torch  # lazy: torch; every `envgen` command loads this module

    try:
        device = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch device; use cpu or cuda (cuda:N for GPU N)"
        ) from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}, but torch finds no GPU; use cpu")
    if device.type == "cuda" and (device.index or 0) >= (count := torch.cuda.device_count()):
        last = f" to cuda:{count - 1}" if count > 1 else ""
        raise argparse.ArgumentTypeError(
            f"{text!r}, but this machine has {count} GPU(s): cuda:0{last}"
        )
    if device.type not in ("cpu", "cuda", "mps"):
        raise argparse.ArgumentTypeError(f"{text!r}: use cpu or cuda")
    return text


def fail(prog: str, exc: BaseException) -> int:
    """Print `exc` as one line on stderr under `prog`; the exit code of a user mistake."""
    print(f"{prog}: {exc}", file=sys.stderr)
    return 1
