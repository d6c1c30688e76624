"""Recording a priced model: the estimate printed first, the spending cap, no key on disk."""

import dataclasses

import pytest

from envgen.llm.budget import Budget, BudgetExceededError, call_cost, estimate_usd, run_calls
from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.request import ChatRequest, Message, request_record
from envgen.pipeline.train import main
from tests.test_llm_cache import SECRET, _stub_backend

GPT4 = "gpt-4-1106-preview"


def _request(label: str, max_tokens: int = 1000) -> ChatRequest:
    return ChatRequest((Message("user", "design " * 50),), 0.0, 0, max_tokens, label=label)


def test_calls_per_run_and_estimate():
    assert run_calls("envgen", 4, 4, 16) == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert run_calls("adversarial", 2, 4, 16) == [(0, 16), (0, 16)]
    assert run_calls("original_only", 4, 4, 16) == []
    # GPT-4-Turbo ($10 / $30 per 1M): the paper's ~$0.03 first call and ~$0.04 feedback call
    first, second = (estimate_usd(GPT4, [call]) for call in run_calls("envgen", 2, 4, 16))
    assert 0.03 <= first <= 0.05 and 0.04 <= second <= 0.07
    assert estimate_usd("some-local-model", [(0, 4)]) is None


def test_cap_stops_before_the_call_that_could_pass_it_and_keeps_what_was_recorded(
    tmp_path, monkeypatch
):
    factory = _stub_backend(monkeypatch, ["first", "second"])  # usage 5 + 3 tokens a call
    record = request_record(_request("a"), GPT4)
    worst = call_cost(GPT4, record)
    budget = Budget(max_usd=worst * 1.5, since="2000-01-01T00:00:00Z", model=GPT4)
    llm = CachedLLM(
        "fill", tmp_path, backend_config("openai"), client_factory=factory, budget=budget
    )
    assert llm(_request("a")).text == "first"  # spent: 5 x $10/1M + 3 x $30/1M
    spent = budget.spent([dict(e) for _, e in llm.cache.entries()])
    assert spent == pytest.approx((5 * 10 + 3 * 30) / 1e6)
    with pytest.raises(BudgetExceededError, match=r"\(b\).*--max-usd is \$0\.0[0-9].*higher"):
        llm(_request("b", max_tokens=4000))  # its worst case passes the cap
    assert len(list(tmp_path.iterdir())) == 1  # nothing stored for the refused call
    assert llm(_request("a")).cached  # recorded replies still replay
    # A later session (its own start time) has spent nothing yet.
    later = dataclasses.replace(budget, since="2999-01-01T00:00:00Z")
    assert later.spent([dict(e) for _, e in llm.cache.entries()]) == 0.0
    for path in tmp_path.iterdir():
        assert SECRET not in path.read_text()


def test_cap_needs_a_price_and_the_pipeline_asks_for_it_before_anything_runs(tmp_path, capsys):
    with pytest.raises(Exception, match="no price is known"):
        Budget(1.0, "", "deepseek-coder-33b-instruct")
    args = ["replication/table5.yaml", "--runs-root", str(tmp_path / "runs"), "--llm-mode"]
    assert main([*args, "fill", "--backend", "openai", "--model", GPT4]) == 1
    assert "give --max-usd" in capsys.readouterr().err
    assert main([*args, "fill", "--backend", "local", "--model", GPT4]) == 1
    assert "serves only" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
