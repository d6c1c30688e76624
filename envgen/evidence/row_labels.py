"""`envgen verify`: a row labelled `not_recorded` or `llm_unusable` carries the reason the
LLM's records give, not one typed in.

Such a row has no finished run to re-derive from; it rests on the response cache, so its
reason is re-derived from there:

- `not_recorded`: a cache miss (`CachedLLM`'s message) for the row's own model, in the
  row's own slot where it names one, whose request key has no reply in the cache (with
  one, the row would replay).
- `llm_unusable`: the call that gave up, to which the cache holds a reply of the row's
  model (or a re-ask's) that, parsed again, fails with the reason's words.

A row relabelled from one to the other, or given a reason of its own, fails naming the
row. A miss's key is not recomputed: that needs the run's prompt, so its training.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envgen.errors import LLMResponseError
from envgen.llm.cache import ResponseCache
from envgen.llm.conversation import REASK_SUFFIX
from envgen.llm.parse import parse_environments
from envgen.pipeline.job_status import LLM_UNUSABLE, NOT_RECORDED

_COUNT = r"\d+ of \d+ run\(s\) "
_MISS = re.compile(
    _COUNT + NOT_RECORDED + r": no recorded reply for model '(?P<model>[^']+)', call "
    r"'(?P<call>[^']+)', (?:slot (?P<slot>\S+), )?request key (?P<key>[0-9a-f]{64}) in "
)
_UNUSABLE = re.compile(_COUNT + LLM_UNUSABLE + r": (?P<call>[^:\s]+): (?P<words>.+)")
_N = re.compile(r"/n(\d+)/")


def label_problem(row: Mapping[str, Any], cache: ResponseCache) -> str | None:
    """Why `row`'s not_recorded or llm_unusable label or reason is not what the cache
    gives, or None (also for any other status)."""
    status, reason = row.get("status"), str(row.get("reason") or "")
    if status not in (NOT_RECORDED, LLM_UNUSABLE):
        return None
    designer = row.get("designer") or ""
    model = designer.removeprefix("llm:") if designer.startswith("llm:") else None
    if model is None:
        return f"{status}, but the row has no LLM designer ({designer or 'none'})"
    if status == NOT_RECORDED:
        return _miss_problem(row, reason, model, cache)
    return _unusable_problem(row, reason, model, cache)


def _miss_problem(
    row: Mapping[str, Any], reason: str, model: str, cache: ResponseCache
) -> str | None:
    miss = _MISS.match(reason)
    if miss is None:
        return f"not_recorded, but its reason is not a cache miss: {reason[:80]!r}"
    if miss["model"] != model:
        return f"not_recorded for model {miss['model']!r}; the row's designer is {model!r}"
    slot = miss["slot"]
    if slot is not None and not (
        slot.startswith(f"{row.get('config_hash')}/seed-") and slot.endswith(f"/{miss['call']}")
    ):
        return f"not_recorded in slot {slot}, not a slot of this row's call {miss['call']!r}"
    if cache.load(miss["key"]) is not None:
        return (
            f"not_recorded, but {cache.directory} holds the reply to request key "
            f"{miss['key']}: the row replays; run its stage again"
        )
    return None


def _unusable_problem(
    row: Mapping[str, Any], reason: str, model: str, cache: ResponseCache
) -> str | None:
    unusable = _UNUSABLE.match(reason)
    n = _N.search(unusable["call"]) if unusable else None
    if unusable is None or n is None:
        return f"llm_unusable, but its reason names no call that gave up: {reason[:80]!r}"
    call, words = unusable["call"], unusable["words"].strip()
    game = str(row.get("game") or "crafter")
    for _, entry in cache.entries():
        label = str(entry.get("label"))
        if not (label == call or label.startswith(call + REASK_SUFFIX)):
            continue
        if entry["request"]["model"] != model:
            continue
        for obfuscated in (False, True):
            try:
                parse_environments(
                    entry["response"]["text"], int(n[1]), game, obfuscated=obfuscated
                )
            except LLMResponseError as exc:
                if str(exc).splitlines()[0].strip() == words:
                    return None
    return (
        f"llm_unusable at call {call!r}, but {cache.directory} holds no reply of "
        f"{model!r} to it that fails that way ({words[:60]!r})"
    )
