"""Accounting: hand-computed costs, replays counted like live calls."""

import json

from envgen.llm.accounting import Ledger, write_accounting
from envgen.llm.request import ChatResponse, Usage


def _reply(prompt, completion, cached=False):
    return ChatResponse("x", "m", Usage(prompt, completion), "stop", 0, cached=cached)


def test_costs_and_counts(tmp_path):
    ledger = Ledger()
    ledger.add("gpt-4-1106-preview", _reply(2000, 500), reask=False)
    ledger.add("gpt-4-1106-preview", _reply(3000, 500, cached=True), reask=True)
    ledger.add("gpt-3.5-turbo", _reply(1_000_000, 1_000_000), reask=False)
    ledger.add("smollm2-135m-instruct", _reply(800, 600), reask=False)
    summary = ledger.summary()
    gpt4 = summary["models"]["gpt-4-1106-preview"]
    # 5000 * $10/1M + 1000 * $30/1M
    assert gpt4["cost_usd"] == 0.08
    assert (gpt4["calls"], gpt4["reasks"], gpt4["cache_hits"]) == (2, 1, 1)
    assert summary["models"]["gpt-3.5-turbo"]["cost_usd"] == 2.0
    assert summary["models"]["smollm2-135m-instruct"]["cost_usd"] == 0.0
    assert summary["cost_usd"] == 2.08 and summary["calls"] == 4
    write_accounting(ledger, tmp_path / "run" / "llm_accounting.json")
    assert json.loads((tmp_path / "run" / "llm_accounting.json").read_text()) == summary


def test_unknown_price_gives_no_total():
    ledger = Ledger()
    ledger.add("deepseek-coder-33b-instruct", _reply(10, 10), reask=False)
    summary = ledger.summary()
    assert summary["cost_usd"] is None
    assert summary["models"]["deepseek-coder-33b-instruct"]["cost_usd"] is None
