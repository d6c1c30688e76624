"""Rows by the paper's label across tables: one experiment, one set of runs.

The same experiment appears in several tables under different labels (EnvGen's
default is in Tables 1-4, 6 and 7) and is trained once (same config hash, same run
directories). Figures and claims look rows up by the label `envgen.stats.claims` uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from envgen.report.inputs import DONE, RunRecord, TableRecord
from envgen.stats.claims import SAME_EXPERIMENT

CRAFTER_ONLY = SAME_EXPERIMENT["PPO + 0.96M Crafter pretraining"]  # 1.96M Crafter steps


def rows_by_label(tables: Sequence[TableRecord]) -> dict[str, tuple[RunRecord, ...]]:
    """{paper label: runs of done rows with that label}, each run directory once."""
    out: dict[str, dict[str, RunRecord]] = {}
    for table in tables:
        for row in table.rows:
            if row.status != DONE:
                continue
            runs = out.setdefault(row.claim_label(), {})
            for run in row.runs:
                runs.setdefault(str(run.run_dir), run)
    return {label: tuple(runs.values()) for label, runs in out.items()}
