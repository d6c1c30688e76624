"""How a table's LLM replies were replayed: the lines tables and CLAIMS.md print.

A reply recorded on another machine answered feedback numbers that differ from the ones
the replaying agent produced (`envgen.llm.slots`); a reviewer sees here how many calls
were served that way and how far their feedback drifted, in success-rate points.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envgen.llm.slots import combine_summaries
from envgen.report.inputs import DONE, TableRecord


def describe(replay: Mapping[str, Any]) -> str:
    """One row's or table's replay in words. Calls a run made live (a campaign's recording
    runs ask the server as they train) are counted apart: they were not replayed."""
    live = replay.get("live", 0)
    if live:
        served = (
            f"{replay['calls']} calls: {live} asked live as the runs trained (recorded with "
            f"them), {replay['exact']} replayed exact, {replay['slot']} by slot"
        )
    else:
        served = (
            f"replayed {replay['calls']} calls ({replay['exact']} exact, {replay['slot']} by slot)"
        )
    return (
        f"{served}; feedback drift up to {replay['max_drift']:.1f} points "
        f"(mean {replay['mean_drift']:.2f})"
    )


def table_replay(table: TableRecord) -> dict[str, Any] | None:
    """The replay of a table's done rows, summed (rows shared by tables counted per table)."""
    replays = [r.llm_replay for r in table.rows if r.status == DONE and r.llm_replay]
    if not replays:
        return None
    return combine_summaries(replays)


def row_lines(table: TableRecord) -> list[str]:
    """Markdown lines, one per done row with LLM calls (empty if none)."""
    rows = [r for r in table.rows if r.status == DONE and r.llm_replay]
    if not rows:
        return []
    return ["", 'LLM replay (docs/llm.md, "Replay modes"):', ""] + [
        f"- {r.row}: {describe(r.llm_replay)}" for r in rows
    ]


def claims_lines(tables: list[TableRecord] | tuple[TableRecord, ...]) -> list[str]:
    """The CLAIMS.md section: one line per table whose rows made LLM calls."""
    lines = [
        "## LLM replay",
        "",
        "Replies are replayed by protocol slot: where this machine's feedback numbers differ "
        "from those the recorded reply answered, the reply is still used and the difference "
        "(drift, success-rate points) is shown here (docs/llm.md).",
        "",
    ]
    for table in tables:
        replay = table_replay(table)
        if replay is not None:
            lines.append(f"- {table.table}: {describe(replay)}")
    return lines
