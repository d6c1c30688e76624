"""Turn an LLM reply into validated environment configs, or say exactly why not.

Where JSON is looked for, in order: fenced code blocks (a closing fence must stand
on its own line, so a "```" inside a string does not end a block); if there are
none, every top-level {...} or [...] in the text. A list, or an object wrapping a
list of environments (e.g. under "environments", the structured-output reply),
contributes each element. Each candidate is validated by the family's
`from_dict`; the first `n` usable ones are returned with every warning.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from envgen.errors import ConfigError, LLMResponseError
from envgen.llm import jsonish
from envgen.llm.envs import env_spec

# Replies are bounded by max_tokens (a few thousand tokens); a longer text is hostile
# or broken, and only its head is read so that parsing time stays bounded.
MAX_REPLY_CHARS = 256 * 1024

_FENCE = re.compile(r"^[ \t]*```[ \t]*[\w+-]*[ \t]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)
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
    text: str, n: int, env: str = "crafter", *, obfuscated: bool = False
) -> ParsedEnvironments:
    """Validated configs for `n` environments from `text`, else `LLMResponseError`.

    `obfuscated` maps the ablation's parameter1/optionA/item1 names back first.
    """
    spec = env_spec(env)
    names = spec.name_map(obfuscated)
    warnings: list[str] = []
    if len(text) > MAX_REPLY_CHARS:
        warnings.append(f"reply is {len(text)} characters; only the first {MAX_REPLY_CHARS} read")
        text = text[:MAX_REPLY_CHARS]

    configs: list[Any] = []
    failures: list[str] = []
    repaired = False
    for i, cand in enumerate(_candidates(text)):
        where = f"environment[{i}]"
        if cand.error:
            failures.append(f"{cand.source}: {cand.error}")
            continue
        repaired |= cand.repaired
        value = names.reveal(cand.value)
        if isinstance(value, Mapping) and cand.purpose and "purpose" not in value:
            value = {**value, "purpose": cand.purpose}
        try:
            config = spec.config_cls.from_dict(
                value, default_length=spec.default_length, path=where
            )
        except ConfigError as exc:
            failures.append(f"{cand.source} ({where}): {names.hide(str(exc))}")
            continue
        if cand.repaired:
            warnings.append(f"{cand.source} ({where}): JSON needed repairs to parse")
        warnings.extend(names.hide(w) for w in config.warnings)
        configs.append(config)

    if len(configs) < n:
        raise LLMResponseError(_shortfall(len(configs), n, failures))
    warnings.extend(f"skipped {f}" for f in failures)
    if len(configs) > n:
        warnings.append(f"reply holds {len(configs)} usable environments; kept the first {n}")
    return ParsedEnvironments(configs=configs[:n], warnings=warnings, repaired=repaired)


def _shortfall(found: int, n: int, failures: list[str]) -> str:
    head = f"expected {n} environments, found {found} usable"
    if not failures:
        return head + (
            "; the reply contains no JSON object. Write each environment as a JSON object "
            "in its own ```json block."
        )
    return head + ":\n" + "\n".join(f"- {f}" for f in failures)


def _candidates(text: str) -> list[_Candidate]:
    blocks = list(_FENCE.finditer(text))
    if not blocks:
        return _from_spans(text, "JSON at character {start}", "")
    out: list[_Candidate] = []
    previous_end = 0
    for b, block in enumerate(blocks, start=1):
        purpose = _last_purpose(text[previous_end : block.start()])
        previous_end = block.end()
        body = block.group(1)
        if not body.strip():
            out.append(_Candidate(f"block {b}", error="empty code block"))
            continue
        try:
            value, repaired = jsonish.loads(body)
        except jsonish.JSONishError:
            out.extend(_from_spans(body, f"block {b} (JSON at character {{start}})", purpose))
            continue
        out.extend(_expand(value, f"block {b}", purpose, repaired))
    return out


def _from_spans(text: str, source: str, purpose: str) -> list[_Candidate]:
    out: list[_Candidate] = []
    for start, end, complete in jsonish.regions(text):
        where = source.format(start=start)
        if not complete:
            out.append(_Candidate(where, error="truncated JSON (the reply ends inside it)"))
            continue
        try:
            value, repaired = jsonish.loads(text[start:end])
        except jsonish.JSONishError as exc:
            out.append(_Candidate(where, error=str(exc)))
            continue
        out.extend(_expand(value, where, purpose, repaired))
    if not out and text.strip() and source.startswith("block"):
        out.append(_Candidate(source.split(" (")[0], error="no JSON object in the code block"))
    return out


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


def _last_purpose(prose: str) -> str:
    found = _PURPOSE.findall(prose[-2000:])
    return found[-1].strip().strip("*").strip()[:500] if found else ""
