"""Reading YAML that someone else may have written: bounded in size and nesting.

The YAML twin of `envgen.json_input`. `loads` refuses a file over `MAX_BYTES` before
reading it, and one nesting deeper than `MAX_DEPTH` (whose `yaml.safe_load` would raise
`RecursionError`) while walking PyYAML's event stream, iteratively, before anything builds
the value; `loads_mapping` also requires a mapping at the top. Each refusal is one
`YAMLInputError` line naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from envgen.errors import InputError
from envgen.files import read_bounded, too_large

MAX_BYTES = 16 * 2**20
"""Largest YAML file read: 16 MiB (dvc.yaml, the largest the project has, is under
1 MiB; a run config or params.yaml a few KB)."""
MAX_DEPTH = 32
"""Deepest nesting of sequences and mappings, aliases counted as the node they name
(the project's files nest at most 5 deep)."""

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # for the depth walk: fast


class YAMLInputError(InputError):
    """A YAML file that is too large, too deep, not YAML or not the kind of value asked for."""


def nesting_depth(text: str | bytes, stop_above: int | None = None) -> int:
    """How deep sequences and mappings nest in YAML `text`, an alias counting as deep as
    its anchor's node; the walk stops at the first depth over `stop_above`, returning it.
    `yaml.YAMLError` on a syntax error."""
    anchors: dict[str, int] = {}
    open_nodes: list[list[Any]] = [[None, 0]]  # [anchor, deepest child's height]; [0]: stream
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append([event.anchor, 0])
            if stop_above is not None and len(open_nodes) - 1 > stop_above:
                return len(open_nodes) - 1
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, children = open_nodes.pop()
            height = children + 1
        elif isinstance(event, yaml.ScalarEvent):
            anchor, height = event.anchor, 0
        elif isinstance(event, yaml.AliasEvent):
            anchor, height = None, anchors.get(event.anchor, 0)
        else:
            continue
        if anchor is not None:
            anchors[anchor] = height
        open_nodes[-1][1] = max(open_nodes[-1][1], height)
        if stop_above is not None and len(open_nodes) - 1 + height > stop_above:
            return len(open_nodes) - 1 + height
    return open_nodes[0][1]


def loads(data: bytes | str, where: object, max_bytes: int = MAX_BYTES) -> Any:
    """The value of YAML text `data` read from `where` (named in the errors)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise YAMLInputError(where, too_large(len(raw), max_bytes, "YAML"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YAMLInputError(where, f"not UTF-8 text (byte {exc.start}); not YAML") from None
    try:
        depth = nesting_depth(text, stop_above=MAX_DEPTH)
        if depth > MAX_DEPTH:
            raise YAMLInputError(
                where,
                f"sequences and mappings nest {depth} deep or more, more than {MAX_DEPTH}; "
                "it is not a file this project wrote",
            )
        return yaml.safe_load(text)  # the pure-Python loader, whose values configs were read with
    except yaml.YAMLError as exc:
        raise YAMLInputError(where, _syntax_error(exc)) from None
    except RecursionError:  # not reached within MAX_DEPTH; kept as a last line of defence
        raise YAMLInputError(where, "nested too deep to read; not a file of this project") from None


def loads_mapping(data: bytes | str, where: object, what: str) -> dict[str, Any]:
    """`loads`, with a mapping at the top (`what` the file should hold, for the messages)."""
    value = loads(data, where)
    if value is None:
        raise YAMLInputError(where, f"is empty; it must hold {what}")
    if not isinstance(value, Mapping):
        raise YAMLInputError(
            where,
            f"holds a {type(value).__name__}, not `field: value` lines (a mapping); it must "
            f"hold {what}",
        )
    return dict(value)


def read(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """The YAML value of the file `path` (its size checked before it is read)."""
    data = read_bounded(path, max_bytes, YAMLInputError, "YAML")
    return loads(data, path, max_bytes)


def _syntax_error(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if "nesting depth" in problem:  # libyaml's own cap (1,000) met while scanning ahead
        return (
            f"sequences and mappings nest deeper than {MAX_DEPTH}{where}; it is not a file "
            "this project wrote"
        )
    return f"YAML syntax error{where}: {problem}; fix that line"
