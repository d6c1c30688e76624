"""The check that every cached Crafter adaptation request carries the authors' history
wherever it fits (one line of `envgen verify`, docs/llm.md "Context").

A run's chain is adapt2, adapt3, ...: cycle j's exchange is adapt j's last message (its
prompt) and the reply adapt j+1 carries after it. Nothing names a chain in the cache, so
each call's predecessor is found from its messages (`ancestry`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from envgen.errors import EnvGenError
from envgen.llm.cache import ResponseCache
from envgen.llm.conversation import PromptOptions, auto_room, context_window, fitting_exchanges
from envgen.llm.request import Message

ADAPT = re.compile(r"^crafter/adapt(\d+)/(.+?)(?:/reask(\d+))?$")
WHOLE_HISTORY_CYCLES = 10
"""Up to this cycle every cached adaptation request must carry the whole history (the
1.5B model's context holds it with room to spare)."""


@dataclasses.dataclass(frozen=True)
class Call:
    """One cached adaptation request (`reask` 0: the call itself, else its re-ask's number)."""

    cycle: int
    entry: dict[str, Any]
    reask: int = 0

    @property
    def messages(self) -> list[Message]:
        return [Message(m["role"], m["content"]) for m in self.entry["request"]["messages"]]

    @property
    def model(self) -> str:
        return self.entry["request"]["model"]

    @property
    def authors_length(self) -> int:
        """The authors' layout: 2K-3 messages at cycle K, 2 more per re-ask."""
        return 2 * self.cycle - 3 + 2 * self.reask


def adaptations(entries: Iterable[dict[str, Any]]) -> list[Call]:
    """The cached Crafter adaptation requests, re-asks included."""
    found = [(ADAPT.match(entry["label"]), entry) for entry in entries]
    return [Call(int(m[1]), entry, int(m[3] or 0)) for m, entry in found if m]


def ancestry(call: Call, calls: Sequence[Call]) -> list[Call] | None:
    """adapt2, ..., `call`: each call's predecessor is the request of the cycle before
    with the same model and first message whose last message (its prompt) this one
    carries third from last; None where one is not cached or the layout is not today's."""
    path = [call]
    while path[0].cycle > 2:
        here = path[0].messages
        if len(here) < 3 or len(here) % 2 == 0:
            return None
        before = [
            c for c in calls
            if c.cycle == path[0].cycle - 1 and c.model == call.model
            and c.messages[-1] == here[-3] and c.messages[0] == here[0]
        ]  # fmt: skip
        if not before:
            return None
        path.insert(0, min(before, key=lambda c: _unlikeness(c, here)))
    return path if len(path[0].messages) == 1 else None


def _unlikeness(candidate: Call, here: Sequence[Message]) -> tuple[bool, bool, int]:
    """How far `candidate` is from being the predecessor of the request `here`.

    A trimmed request and auto's whole one end in the same prompt, and the 1.5B model
    often repeats its reply word for word, so the reply alone cannot tell them apart:
    first the candidate whose whole request starts this one (the whole history), then
    the one whose reply this one carries (a re-asked reply is the re-ask's), then the
    one whose length is nearest (a fixed trim keeps one length; auto's grows by one
    exchange a cycle between its drops)."""
    prefix = list(here[: len(candidate.messages)]) == list(candidate.messages)
    replied = candidate.entry["response"]["text"] == here[-2].content
    return (not prefix, not replied, abs(len(candidate.messages) - (len(here) - 2)))


def auto_messages(path: Sequence[Call], context: int) -> list[Message]:
    """What "auto" sends at path[-1], from the recorded exchanges of its ancestry."""
    exchanges = [(path[j].messages[-1], path[j + 1].messages[-2]) for j in range(len(path) - 1)]
    room = auto_room(context, path[-1].entry["request"]["max_tokens"], PromptOptions().max_reasks)
    prompt = path[-1].messages[-1]
    return [*(m for pair in fitting_exchanges(exchanges, prompt, room) for m in pair), prompt]


def history_problems(
    entries: Sequence[dict[str, Any]], contexts: Callable[[str], int | None] = context_window
) -> list[str]:
    """One line per cached Crafter adaptation request that does not carry the authors'
    messages (`Call.authors_length`) at a cycle <= `WHOLE_HISTORY_CYCLES`, or (not a
    re-ask, a model of known context) differs from what "auto" sends from its ancestry."""
    calls = adaptations(entries)
    firsts = [c for c in calls if not c.reask]
    problems = []
    for call in sorted(calls, key=lambda c: (c.cycle, c.entry["key"])):
        where = f"{call.entry['label']} ({call.model}, {call.entry['key'][:12]})"
        sent = len(call.messages)
        if call.cycle <= WHOLE_HISTORY_CYCLES and sent != call.authors_length:
            problems.append(f"{where} sends {sent} messages, the authors' {call.authors_length}")
            continue
        context = contexts(call.model)
        if call.reask or context is None:
            continue
        path = ancestry(call, firsts)
        if path is None:
            problems.append(f"{where}: no cached ancestry in today's layout")
        elif auto_messages(path, context) != call.messages:
            problems.append(f"{where} is not what llm_history_cycles: auto sends there")
    return problems


def history_verdict(cache_dir: Path) -> tuple[bool, str]:
    """`envgen verify`'s line on the history the cached adaptation requests carry."""
    try:
        entries = [entry for _, entry in ResponseCache(cache_dir).entries()]
    except EnvGenError as exc:
        return False, str(exc)
    problems = history_problems(entries)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        return False, (
            f"{problems[0]}{more}: record it again with llm_history_cycles: auto "
            '(docs/llm.md, "Context") and drop the old entry'
        )
    count = len(adaptations(entries))
    return True, (
        f"all {count} cached Crafter adaptation requests carry the authors' 2K-3 messages "
        f"through cycle {WHOLE_HISTORY_CYCLES} and auto's history at every cycle"
    )
