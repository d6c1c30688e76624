"""Turn an LLM reply into validated environment configs, or say exactly why not.

JSON is looked for in fenced code blocks (a closing fence stands on its own line, so a
"```" inside a string ends none), else in every top-level {...} or [...] of the text. A
list, or an object wrapping one (the structured reply's "environments"), contributes
each element. Each candidate is validated by the game's `from_dict`; the first `n`
usable ones are returned with every warning.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from envgen.errors import ConfigError, LLMResponseError
from envgen.llm import jsonish
from envgen.llm.design_spec import design_spec

# Replies are bounded by max_tokens (a few thousand tokens); a longer text is hostile
# or broken, and only its head is read so that parsing time stays bounded.
MAX_REPLY_CHARS = 64 * 1024

# More JSON values than this in one reply is hostile or broken; the rest is ignored.
MAX_CANDIDATES = 256

_OPEN_FENCE = re.compile(r"^[ \t]*```[ \t]*[\w+-]*[ \t]*\n", re.M)
_CLOSE_FENCE = re.compile(r"^[ \t]*```[ \t]*$", re.M)
_PURPOSE = re.compile(r"purpose\W{0,4}\s*[:=-]\s*\**\s*(.+)", re.I)
_ENV_KEY = re.compile(r"^\W*env(ironment)?\W*\d+\W*$", re.I)


@dataclasses.dataclass(frozen=True)
class ParsedEnvironments:
    """The usable environments of one reply."""

    configs: list[Any]
    """Exactly the `n` validated configs asked for, in reply order."""
    warnings: list[str]
    """Everything repaired, clamped, skipped or dropped on the way."""
    repaired: bool
    """True when some JSON needed repairs (comments, trailing commas, quotes...)."""


@dataclasses.dataclass(frozen=True)
class _Candidate:
    source: str
    value: Any = None
    error: str = ""
    purpose: str = ""
    repaired: bool = False


def parse_environments(
    text: str, n: int, game: str = "crafter", *, obfuscated: bool = False
) -> ParsedEnvironments:
    """Validated configs for `n` environments from `text`, else `LLMResponseError`;
    `obfuscated` maps the ablation's parameter1/optionA/item1 names back first."""
    spec = design_spec(game)
    names = spec.name_map(obfuscated)
    warnings: list[str] = []
    if len(text) > MAX_REPLY_CHARS:
        warnings.append(f"reply is {len(text)} characters; only the first {MAX_REPLY_CHARS} read")
        text = text[:MAX_REPLY_CHARS]

    usable: list[tuple[Any, list[str], bool]] = []  # (config, its warnings, repaired)
    failures: list[str] = []
    for i, cand in enumerate(_candidates(text)):
        if i == MAX_CANDIDATES:
            warnings.append(f"reply holds more than {MAX_CANDIDATES} JSON values; the rest ignored")
            break
        where = f"environment[{i}]"
        if cand.error:
            failures.append(f"{cand.source}: {cand.error}")
            continue
        notes = [f"{cand.source} ({where}): JSON needed repairs to parse"] if cand.repaired else []
        value = _drop_nulls(names.reveal(cand.value), where, notes)
        if isinstance(value, Mapping) and cand.purpose and "purpose" not in value:
            value = {**value, "purpose": cand.purpose}
        try:
            config = spec.config_cls.from_dict(
                value, default_length=spec.default_length, path=where
            )
        except ConfigError as exc:
            failures.append(f"{cand.source} ({where}): {names.hide(str(exc))}")
            continue
        usable.append((config, notes + [names.hide(w) for w in config.warnings], cand.repaired))

    if len(usable) < n:
        raise LLMResponseError(_shortfall(len(usable), n, failures, warnings))
    for _, notes, _ in usable[:n]:
        warnings.extend(notes)
    warnings.extend(f"skipped {f}" for f in failures)
    if len(usable) > n:
        warnings.append(f"reply holds {len(usable)} usable environments; kept the first {n}")
    return ParsedEnvironments(
        configs=[c for c, _, _ in usable[:n]],
        warnings=warnings,
        repaired=any(r for _, _, r in usable[:n]),
    )


def settings_key(config: Any) -> str:
    """What makes two designed environments the same: their environment and inventory
    settings as validated (the purpose line and the episode length do not count)."""
    data = config.to_dict()
    return json.dumps([data["environment_settings"], data["inventory_settings"]], sort_keys=True)


def repeated(configs: Sequence[Any]) -> dict[int, int]:
    """Each environment that repeats an earlier one, mapped to the first (0-based)."""
    first: dict[str, int] = {}
    firsts = [first.setdefault(settings_key(config), i) for i, config in enumerate(configs)]
    return {i: j for i, j in enumerate(firsts) if j != i}


def _shortfall(found: int, n: int, failures: list[str], notes: list[str]) -> str:
    lines = [f"- {x}" for x in (*notes, *failures)]
    if not failures and not found:
        lines.append(
            "- the reply contains no JSON object; write each environment as a JSON object "
            "in its own ```json block"
        )
    elif not failures:
        lines.append(f"- the reply holds only {found}; write exactly {n}, each in its own block")
    return f"expected {n} environment(s), found {found} usable:\n" + "\n".join(lines)


def _fenced_blocks(text: str) -> Iterator[tuple[int, int, str]]:
    """(fence start, fence end, body) of each fenced block; an unclosed one runs to the end."""
    pos = 0
    while (opening := _OPEN_FENCE.search(text, pos)) is not None:
        closing = _CLOSE_FENCE.search(text, opening.end())
        end = closing.end() if closing else len(text)
        body_end = closing.start() if closing else len(text)
        yield opening.start(), end, text[opening.end() : body_end]
        pos = end


def _candidates(text: str) -> Iterator[_Candidate]:
    if _OPEN_FENCE.search(text) is None:
        yield from _from_spans(text, "JSON at character {start}", "")
        return
    previous_end = 0
    for b, (start, end, body) in enumerate(_fenced_blocks(text), start=1):
        purpose = _last_purpose(text[previous_end:start])
        previous_end = end
        if not body.strip():
            yield _Candidate(f"block {b}", error="empty code block")
            continue
        try:
            value, repaired = jsonish.loads(body)
        except jsonish.JSONishError:
            yield from _from_spans(body, f"block {b} (JSON at character {{start}})", purpose)
            continue
        yield from _expand(value, f"block {b}", purpose, repaired)


def _from_spans(text: str, source: str, purpose: str) -> Iterator[_Candidate]:
    found = False
    for start, end, complete in jsonish.regions(text):
        found = True
        where = source.format(start=start)
        if not complete:
            yield _Candidate(where, error="truncated JSON (the reply ends inside it)")
            continue
        try:
            value, repaired = jsonish.loads(text[start:end])
        except jsonish.JSONishError as exc:
            yield _Candidate(where, error=str(exc))
            continue
        yield from _expand(value, where, purpose, repaired)
    if not found and source.startswith("block"):
        yield _Candidate(source.split(" (")[0], error="no JSON object in the code block")


def _expand(value: Any, source: str, purpose: str, repaired: bool) -> list[_Candidate]:
    """One candidate per environment: lists and wrapper objects contribute their items."""
    items = _wrapped_items(value)
    if items is None:
        return [_Candidate(source, value=value, purpose=purpose, repaired=repaired)]
    return [
        _Candidate(f"{source} item {k}", value=v, repaired=repaired)
        for k, v in enumerate(items, start=1)
    ]


def _wrapped_items(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if not isinstance(value, Mapping) or not value:
        return None
    for inner in value.values():  # {"environments": [...]} and similar wrappers
        if isinstance(inner, list) and inner and all(isinstance(v, Mapping) for v in inner):
            return inner
    if all(isinstance(k, str) and _ENV_KEY.match(k) for k in value):  # {"environment_1": {}}
        return list(value.values())
    return None


def _drop_nulls(value: Any, where: str, warnings: list[str]) -> Any:
    """A null setting means "not set": drop it so that the default applies."""
    if not isinstance(value, Mapping):
        return value
    out = {}
    for key, inner in value.items():
        if inner is None:
            warnings.append(f"{where}.{key}: null, so the default applies")
        else:
            out[key] = _drop_nulls(inner, f"{where}.{key}", warnings)
    return out


def _last_purpose(prose: str) -> str:
    found = _PURPOSE.findall(prose[-2000:])
    return found[-1].strip().strip("*\"' ")[:500] if found else ""
