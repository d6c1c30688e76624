"""`python -m envgen.llm.auto_history_cost` over the committed cache, which now holds some
of auto's own requests beside the ones they replace (docs/llm.md, "Context")."""

from __future__ import annotations

from pathlib import Path

from envgen.llm.auto_history_cost import report


def test_the_cost_report_counts_recorded_auto_requests_and_costs_only_the_missing():
    lines = report(Path("data/llm_cache"))
    rows = {
        line.rsplit(": ", 1)[0]: int(line.rsplit(": ", 1)[1]) for line in lines if " | " in line
    }
    recorded = rows.get("qwen2.5-coder-1.5b-instruct | n4/set0 | auto's request, recorded", 0)
    replaced = rows.get(
        "qwen2.5-coder-1.5b-instruct | n4/set0 | changes, auto's request recorded", 0
    )
    assert recorded >= 1 and recorded == replaced  # each recorded request replaces one
    assert not any("not today's layout" in row for row in rows)  # the old layout is gone
    costs = [line for line in lines if "changed calls" in line]
    assert costs and all(line.startswith("qwen2.5-coder-1.5b-instruct, cycles") for line in costs)
