"""A spending cap for recording a priced model's replies, and the estimate shown first.

The pipeline's jobs run in several processes, so the cap lives in the cache itself: a
recording session has spent the priced usage of the entries stored since it started
(`recorded_at`), a total every process sees alike. A live call starts only if that total
plus the call's worst case stays within `max_usd`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from envgen.errors import CacheMissError, ConfigError
from envgen.llm.accounting import PRICES_PER_M_TOKENS, usd

CHARS_PER_TOKEN = 4  # a rough English/JSON average; estimates only, never accounting

# Tokens of one call, for the estimate printed before recording (docs/llm.md): the
# generation prompt, what each adaptation turn adds (the previous reply plus the
# feedback prompt), and a reply per environment. The paper's figures ($0.03 for the
# first call, $0.04 per feedback call with GPT-4-Turbo) fall inside these.
PROMPT_TOKENS = 1_500
TOKENS_PER_TURN = 1_300
REPLY_TOKENS_PER_ENV = 250


class BudgetExceededError(CacheMissError):
    """The next live call could take the session past `--max-usd`: the reply stays
    unrecorded, so the run stops as on a cache miss (row `not_recorded`, resumable)."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """`max_usd` for the live calls to `model` stored since `since` (UTC, ISO 8601)."""

    max_usd: float
    since: str
    model: str

    def __post_init__(self) -> None:
        if self.max_usd < 0:
            raise ConfigError("max_usd", f"must be >= 0, got {self.max_usd}")
        if self.model not in PRICES_PER_M_TOKENS:
            raise ConfigError(
                "max_usd",
                f"no price is known for {self.model!r} (envgen.llm.accounting), so a "
                "spending cap cannot be enforced; record it without --max-usd",
            )

    def spent(self, entries: Sequence[Mapping[str, Any]]) -> float:
        """USD of this session's stored replies of `model` among cache `entries`."""
        usages = [
            entry.get("response", {}).get("usage", {})
            for entry in entries
            if entry.get("recorded_at", "") >= self.since
            and entry.get("request", {}).get("model") == self.model
        ]
        tokens = [sum(u.get(k, 0) for u in usages) for k in ("prompt_tokens", "completion_tokens")]
        return usd(self.model, *tokens) or 0.0

    def check(
        self, label: str, record: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]
    ) -> None:
        """Raise `BudgetExceededError` if the call `record` could exceed the cap."""
        spent = self.spent(entries)
        worst = call_cost(self.model, record)
        if spent + worst > self.max_usd:
            raise BudgetExceededError(
                f"stopped before a {self.model!r} call ({label}): "
                f"${spent:.2f} spent this session, the call may cost up to ${worst:.2f}, "
                f"--max-usd is ${self.max_usd:.2f}. What is recorded stays in the cache; "
                "re-run the same command with a higher --max-usd to go on"
            )


def call_cost(model: str, record: Mapping[str, Any]) -> float:
    """Worst-case USD of one request: its prompt's estimated tokens plus `max_tokens`."""
    prompt = len(json.dumps(record.get("messages", []))) / CHARS_PER_TOKEN
    return usd(model, prompt, int(record.get("max_tokens") or 0)) or 0.0


def run_calls(method: str, n_cycles: int, envs_per_call: int, pool: int) -> list[tuple[int, int]]:
    """(conversation turn, environments asked for) of each call of one run, re-asks aside."""
    if method == "envgen":
        return [(turn, envs_per_call) for turn in range(n_cycles)]
    if method == "fixed":
        return [(0, envs_per_call)]
    if method == "easy_to_hard":
        return [(0, pool)]
    if method == "adversarial":
        return [(0, pool)] * n_cycles  # a fresh conversation per cycle
    return []


def estimate_usd(model: str, calls: Sequence[tuple[int, int]]) -> float | None:
    """Estimated USD of these (turn, environments) calls; None for a model without a price."""
    prompt = sum(PROMPT_TOKENS + TOKENS_PER_TURN * turn for turn, _ in calls)
    return usd(model, prompt, sum(REPLY_TOKENS_PER_ENV * envs for _, envs in calls))
