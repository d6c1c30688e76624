"""The history every cached Crafter adaptation request carries (`envgen verify`'s "LLM
history" line): the authors' 2K-3 messages through cycle 10, and "auto"'s trim beyond
only where the whole history would not fit the context (docs/llm.md, "Context")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import crafter.constants

from envgen.llm.chains import WHOLE_HISTORY_CYCLES, history_problems, history_verdict
from envgen.llm.conversation import (
    AUTO,
    REASK_TOKENS,
    EnvironmentDesigner,
    PromptOptions,
    token_bound,
)
from envgen.llm.request import ChatResponse, Message, Usage

MODEL = "qwen2.5-coder-1.5b-instruct"
GOOD = (
    '```json\n{"environment_settings": {"target_biome": "mountain"}, '
    '"inventory_settings": {"wood": 2}}\n```'
)
STATS = {name: (12.34, 4.6) for name in crafter.constants.achievements}


class Scripted:
    """An LLMCallable answering GOOD, except "no json" to the call numbered `bad_at`."""

    def __init__(self, bad_at: int = -1):
        self.requests, self.texts, self.bad_at = [], [], bad_at

    def __call__(self, request):
        self.requests.append(request)
        self.texts.append("no json" if len(self.requests) - 1 == self.bad_at else GOOD)
        return ChatResponse(self.texts[-1], "scripted", Usage(1, 1), "stop", 0)


def _entries(history, context, cycles, bad_at=-1):
    """The cache entries of one run's conversation, as the real designer sends them."""
    llm = Scripted(bad_at)
    designer = EnvironmentDesigner(
        PromptOptions(history_cycles=history, context_tokens=context), llm
    )
    designer.generate(1)
    for _ in range(cycles - 1):
        designer.adapt(STATS)
    return [
        {
            "label": r.label,
            "key": f"{i:064x}",
            "request": {
                "model": MODEL,
                "messages": [dataclasses.asdict(m) for m in r.messages],
                "max_tokens": r.max_tokens,
            },
            "response": {"text": text},
        }
        for i, (r, text) in enumerate(zip(llm.requests, llm.texts, strict=True))
    ]


def _sent(entries, cycle):
    return next(e for e in entries if e["label"].startswith(f"crafter/adapt{cycle}/"))


def _context_fitting_through(cycle: int) -> int:
    """A context whose "auto" room holds the whole history through `cycle`, not after."""
    request = _sent(_entries(0, None, cycle), cycle)["request"]
    budget = request["max_tokens"]
    messages = [Message(**m) for m in request["messages"]]
    return token_bound(messages) + budget + PromptOptions().max_reasks * (budget + REASK_TOKENS)


def test_auto_requests_pass_whole_through_the_fit_and_trimmed_beyond():
    context = _context_fitting_through(12)
    entries = _entries(AUTO, context, 14)
    assert len(_sent(entries, 12)["request"]["messages"]) == 21  # whole
    assert len(_sent(entries, 14)["request"]["messages"]) < 25  # trimmed by auto
    assert history_problems(entries, contexts=lambda model: context) == []


def test_a_fixed_trim_at_cycle_ten_or_less_is_named_with_the_authors_count():
    entries = _entries(2, None, 7)
    problems = history_problems(entries, contexts=lambda model: 10**6)
    assert [p.split(" (")[0] for p in problems] == [
        "crafter/adapt6/n1/set0",
        "crafter/adapt7/n1/set0",
    ]
    assert problems[0].endswith("sends 7 messages, the authors' 9")
    assert WHOLE_HISTORY_CYCLES == 10


def test_a_whole_history_past_the_fit_is_not_autos_request():
    context = _context_fitting_through(12)
    entries = _entries(0, None, 13)  # the whole history where auto would trim
    problems = history_problems(entries, contexts=lambda model: context)
    assert len(problems) == 1 and problems[0].startswith("crafter/adapt13/n1/set0 (")
    assert problems[0].endswith("is not what llm_history_cycles: auto sends there")


def test_a_reask_carries_two_more_messages_and_the_chain_continues_after_it():
    entries = _entries(AUTO, 10**6, 5, bad_at=2)  # adapt3's first reply is unusable
    reask = next(e for e in entries if e["label"].endswith("/reask1"))
    assert reask["label"] == "crafter/adapt3/n1/set0/reask1"
    assert len(reask["request"]["messages"]) == 5
    assert history_problems(entries, contexts=lambda model: 10**6) == []
    reask["request"]["messages"] = reask["request"]["messages"][:3]
    assert history_problems(entries, contexts=lambda model: 10**6) == [
        f"crafter/adapt3/n1/set0/reask1 ({MODEL}, {reask['key'][:12]}) sends 3 messages, "
        "the authors' 5"
    ]


def test_every_committed_adaptation_request_carries_the_authors_history():
    ok, detail = history_verdict(Path("data/llm_cache"))
    assert ok, detail
