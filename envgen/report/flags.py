"""Artefacts of a run's scale, flagged where they occur: in the tables and in CLAIMS.md.

At smoke scale the step budgets are rounded to whole rollouts, so rows the paper keeps
apart can become one configuration (Table 7's 5:1 and 2:1) and arms the paper gives
equal budgets can train for different numbers of steps (Table 3: 46,080 / 13,312 /
9,216). A claim can then compare a run set with itself, or test the same two run sets
as another claim. Each is flagged beside the number it affects, at any profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from envgen.report.inputs import DONE, RunRecord, TableRecord
from envgen.report.select import Arm
from envgen.stats.paper_claims import Claim

FLAG = "FLAG"


def paper_steps(reported: pd.DataFrame, label: str) -> int | None:
    """The paper's total steps for a row label (`load_reported()`); None when it gives none."""
    matches = reported[reported.index.get_level_values("row") == label]
    if len(matches) != 1 or pd.isna(matches.iloc[0]["total_steps"]):
        return None
    return int(matches.iloc[0]["total_steps"])


def steps_of(runs: Sequence[RunRecord]) -> tuple[int, ...]:
    """The distinct step counts of a row's runs, sorted."""
    return tuple(sorted({r.global_steps for r in runs}))


def _steps(steps: tuple[int, ...]) -> str:
    return " / ".join(f"{s:,}" for s in steps)


def row_flags(table: TableRecord, reported: pd.DataFrame) -> dict[str, list[str]]:
    """{row: flags} for the done rows of one table: shared configs, unequal step budgets."""
    done = [r for r in table.rows if r.status == DONE]
    flags: dict[str, list[str]] = {r.row: [] for r in done}
    for row in done:
        twins = [o.row for o in done if o is not row and o.config_hash == row.config_hash]
        if twins and row.config_hash is not None:
            names = ", ".join(repr(t) for t in twins)
            flags[row.row].append(
                f"{FLAG}: one configuration ({row.config_hash}) with {names}; "
                "the rows collapse at this profile"
            )
        budget = paper_steps(reported, (row.reported_as or (table.table, row.row))[1])
        if budget is None:
            continue
        ours = steps_of(row.runs)
        others = [
            (o.row, steps_of(o.runs))
            for o in done
            if o is not row
            and paper_steps(reported, (o.reported_as or (table.table, o.row))[1]) == budget
            and steps_of(o.runs) != ours
        ]
        if others:
            listed = "; ".join(f"{name!r} {_steps(s)}" for name, s in others)
            flags[row.row].append(
                f"{FLAG}: {_steps(ours)} steps per run vs {listed}; the paper gives "
                f"them equal budgets ({budget:,})"
            )
    return flags


def claim_flags(
    claims: Sequence[Claim], arms: Mapping[str, Arm], reported: pd.DataFrame
) -> dict[Claim, list[str]]:
    """{claim: flags} for claims whose arms both ran: one config, unequal budgets, a repeat."""
    flags: dict[Claim, list[str]] = {}
    first_of: dict[tuple[str | None, str | None, str], Claim] = {}
    for claim in claims:
        if claim.a not in arms or claim.b not in arms:
            continue
        a, b = arms[claim.a], arms[claim.b]
        out = flags.setdefault(claim, [])
        if a.config_hash is not None and a.config_hash == b.config_hash:
            out.append(f"{FLAG}: a and b are one configuration ({a.config_hash})")
        budget_a, budget_b = paper_steps(reported, claim.a), paper_steps(reported, claim.b)
        steps_a, steps_b = steps_of(a.runs), steps_of(b.runs)
        if budget_a is not None and budget_a == budget_b and steps_a != steps_b:
            out.append(
                f"{FLAG}: unequal budgets, {_steps(steps_a)} vs {_steps(steps_b)} steps per "
                f"run (the paper's are equal, {budget_a:,})"
            )
        key = (a.config_hash, b.config_hash, claim.metric)
        if key in first_of:
            out.append(f"{FLAG}: tests the same runs as {first_of[key].name!r}")
        else:
            first_of[key] = claim
    return flags
