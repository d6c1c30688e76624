"""LLM calls, tokens, re-asks and cost, tallied per model and written as JSON.

Replayed calls count like live ones (from the recorded usage), and as cache hits, so
an experiment's accounting is the same whether it ran live or from the cache.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from envgen.files import write_json_atomic
from envgen.llm.client import LOCAL_MODELS
from envgen.llm.request import ChatResponse

# USD per 1M tokens (input, output), OpenAI's published prices for these model ids.
PRICES_PER_M_TOKENS: dict[str, tuple[float, float]] = {
    "gpt-4-1106-preview": (10.0, 30.0),
    "gpt-3.5-turbo": (0.5, 1.5),
    "gpt-3.5-turbo-0125": (0.5, 1.5),
    "gpt-3.5-turbo-1106": (1.0, 2.0),
    **{model: (0.0, 0.0) for model in LOCAL_MODELS},
}


@dataclasses.dataclass
class Tally:
    """Counts for one model."""

    calls: int = 0
    """Requests answered (live or replayed), re-asks included."""
    reasks: int = 0
    """Of those, re-asks after an unusable reply."""
    cache_hits: int = 0
    """Of those, answered from the response cache."""
    prompt_tokens: int = 0
    """Sum of recorded prompt tokens."""
    completion_tokens: int = 0
    """Sum of recorded completion tokens."""


@dataclasses.dataclass
class Ledger:
    """Mutable tally of every call an experiment made, keyed by requested model."""

    by_model: dict[str, Tally] = dataclasses.field(default_factory=dict)
    """One tally per model name."""

    def add(self, model: str, response: ChatResponse, *, reask: bool) -> None:
        tally = self.by_model.setdefault(model, Tally())
        tally.calls += 1
        tally.reasks += int(reask)
        tally.cache_hits += int(response.cached)
        tally.prompt_tokens += response.usage.prompt_tokens
        tally.completion_tokens += response.usage.completion_tokens

    def summary(self) -> dict[str, Any]:
        """Totals, per-model counts and cost in USD (None where no price is known)."""
        models = {
            model: {**dataclasses.asdict(tally), "cost_usd": cost_usd(model, tally)}
            for model, tally in sorted(self.by_model.items())
        }
        costs = [m["cost_usd"] for m in models.values()]
        totals = {
            key: sum(getattr(t, key) for t in self.by_model.values())
            for key in ("calls", "reasks", "cache_hits", "prompt_tokens", "completion_tokens")
        }
        return {
            **totals,
            "cost_usd": None if None in costs else round(sum(costs), 6),
            "models": models,
            "prices_usd_per_1m_tokens": {
                m: list(PRICES_PER_M_TOKENS[m]) for m in models if m in PRICES_PER_M_TOKENS
            },
        }


def usd(model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
    """USD of these tokens at `model`'s price, or None for a model without a listed price."""
    if model not in PRICES_PER_M_TOKENS:
        return None
    price_in, price_out = PRICES_PER_M_TOKENS[model]
    return (prompt_tokens * price_in + completion_tokens * price_out) / 1e6


def cost_usd(model: str, tally: Tally) -> float | None:
    """Estimated cost of a tally, or None for a model without a listed price."""
    cost = usd(model, tally.prompt_tokens, tally.completion_tokens)
    return None if cost is None else round(cost, 6)


def write_accounting(ledger: Ledger, path: Path) -> None:
    """Write `ledger.summary()` as JSON (atomically) to `path`, e.g. next to results."""
    write_json_atomic(path, ledger.summary())
