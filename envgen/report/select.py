"""Arms by the paper's label across tables: one label, one configuration, one set of runs.

The same experiment appears in several tables under different labels (EnvGen's
default is in Tables 1-4, 6 and 7) and is trained once (same config hash, same run
directories). Figures and claims look arms up by the label `envgen.stats.paper_claims` uses.
Rows that share a label but not a config hash are refused, never pooled: an arm that
held runs of two designers would test neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from envgen.errors import ReportInputError
from envgen.report.inputs import DONE, RunRecord, TableRecord


@dataclasses.dataclass(frozen=True)
class Arm:
    """One experiment: the done rows of every table that print it, and their runs."""

    label: str
    """The paper's label (`RowRecord.claim_label`)."""
    config_hash: str | None
    """The RunConfig hash all its rows share."""
    rows: tuple[tuple[str, str], ...]
    """(table, row) of every done row that lists it."""
    runs: tuple[RunRecord, ...]
    """Its runs, each run directory once."""
    designer: str | None = None
    """Who designed its environments (`RowRecord.designer`); None without designed ones."""


def arms_by_label(tables: Sequence[TableRecord]) -> dict[str, Arm]:
    """{paper label: Arm} of done rows; raises `ReportInputError` for a label with two configs."""
    found: dict[str, tuple[str | None, list[tuple[str, str]], dict[str, RunRecord]]] = {}
    designers: dict[str, str | None] = {}
    for table in tables:
        for row in table.rows:
            if row.status != DONE:
                continue
            label = row.claim_label()
            config, rows, runs = found.setdefault(label, (row.config_hash, [], {}))
            if row.config_hash != config:
                where = ", ".join(f"{t}/{r}" for t, r in rows)
                raise ReportInputError(
                    f"{table.source}: row {row.row!r}",
                    f"config {row.config_hash} is not the config {config} of {where}, which "
                    f"print the same experiment {label!r}; an arm is one configuration. "
                    "Give the rows different labels or make them the same run config.",
                )
            rows.append((table.table, row.row))
            designers.setdefault(label, row.designer)
            for run in row.runs:
                runs.setdefault(str(run.run_dir), run)
    return {
        label: Arm(label, config, tuple(rows), tuple(runs.values()), designers[label])
        for label, (config, rows, runs) in found.items()
    }
