"""`python -m envgen.llm.auto_history_cost` over the committed cache, which now holds some
of auto's own requests beside the ones they replace (docs/llm.md, "Context")."""

from __future__ import annotations

import json
import re
from pathlib import Path

from envgen.llm.auto_history_cost import report


def _longer_than_the_trim() -> int:
    """The 1.5B model's cached n4/set0 requests from adapt6 on with more than the 7
    messages `llm_history_cycles: 2` sends: auto's, counted from the files themselves."""
    count = 0
    for path in Path("data/llm_cache").glob("*.json"):
        entry = json.loads(path.read_text())
        found = re.fullmatch(r"crafter/adapt(\d+)/n4/set0", entry["label"])
        if found and int(found[1]) >= 6 and len(entry["request"]["messages"]) > 7:
            count += entry["request"]["model"] == "qwen2.5-coder-1.5b-instruct"
    return count


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
    assert recorded == _longer_than_the_trim()  # a chain's later calls counted too
    assert not any("not today's layout" in row for row in rows)  # the old layout is gone
    costs = [line for line in lines if "changed calls" in line]
    assert costs and all(line.startswith("qwen2.5-coder-1.5b-instruct, cycles") for line in costs)
