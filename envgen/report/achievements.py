"""A campaign's per-achievement success rates: which skills each designer's worlds moved.

The score (a geometric mean over 22 achievements) can hide a designer that trades
skills: more furnaces, fewer swords. Each row's mean success rate per achievement over
its runs' final-phase episodes, beside the paper's Figure 4 values for context
(approximate; GPT-4-Turbo and its larger network). Descriptive only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from envgen.report.inputs import DONE, TableRecord
from envgen.scoring import ACHIEVEMENTS
from envgen.stats.campaign_spec import words
from envgen.stats.compare import welch_test
from envgen.stats.paper import load_reported_per_achievement
from envgen.stats.runs import moments

# The paper's Figure 4 columns shown for context, with their labels.
PAPER_COLUMNS = {
    "ppo_1.96M_crafter": "paper: 1.96M Crafter only",
    "ppo_envgen": "paper: PPO + EnvGen",
}


def achievement_frame(table: TableRecord) -> pd.DataFrame:
    """One line per achievement: each done row's mean and std success % over its runs,
    then the paper's two Figure 4 values. Columns `<row> mean`, `<row> std`, paper labels."""
    columns: dict[str, list[float]] = {}
    for row in table.rows:
        if row.status != DONE or not row.runs:
            continue
        stats = [
            moments(np.array([run.success_rates[a] for run in row.runs])) for a in ACHIEVEMENTS
        ]
        columns[f"{row.row} mean"] = [mean for mean, _ in stats]
        columns[f"{row.row} std"] = [std for _, std in stats]
    paper = load_reported_per_achievement()
    for column, label in PAPER_COLUMNS.items():
        columns[label] = [float(paper.loc[a, column]) for a in ACHIEVEMENTS]
    return pd.DataFrame(columns, index=pd.Index(ACHIEVEMENTS, name="achievement"))


def done_rows(frame: pd.DataFrame) -> list[str]:
    """The row labels `achievement_frame` holds, in table order."""
    return [c.removesuffix(" mean") for c in frame.columns if c.endswith(" mean")]


def achievement_markdown(table: TableRecord, frame: pd.DataFrame) -> list[str]:
    """Markdown lines of the per-achievement section; empty without a finished run."""
    rows = done_rows(frame)
    if not rows:
        return []
    runs = {r.row: len(r.runs) for r in table.rows if r.status == DONE}
    header = [f"{row} (n={runs[row]})" for row in rows] + list(PAPER_COLUMNS.values())
    lines = [
        "",
        f"**{table.table}: success rate % per achievement (final-phase episodes; ours: "
        "mean ± std over runs; paper: Figure 4, approximate, GPT-4-Turbo designer and its "
        "network, for context only). Descriptive: the tested claims are in CLAIMS.md.**",
        "",
        "| Achievement | " + " | ".join(header) + " |",
        "|" + "---|" * (len(header) + 1),
    ]
    for achievement, line in frame.iterrows():
        cells = [_pm(line[f"{row} mean"], line[f"{row} std"]) for row in rows]
        cells += [f"{line[label]:g}" for label in PAPER_COLUMNS.values()]
        lines.append(f"| {achievement} | " + " | ".join(cells) + " |")
    return lines


def comparison_markdown(table: TableRecord) -> list[str]:
    """Each other row minus the base row per achievement, with the unadjusted two-sided
    Welch p, and how many comparisons that is: the multiplicity a reader needs before
    taking any one of them as a finding. The base is a registered campaign's arm b (so
    the signs are its registered a − b, as CLAIMS.md's D3), else the first row
    (Crafter-only). Only once every row has all its planned runs (a registered campaign
    shows nothing earlier)."""
    rows = [r for r in table.rows if r.status == DONE and r.runs]
    if len(rows) < 2:
        return []
    if any(len(r.runs) < (r.planned_runs or 0) for r in table.rows):
        return ["", f"Per-achievement comparisons: when every planned run of {table.table} is in."]
    registration = words(table.table)
    against = registration.primary.b if registration else rows[0].row
    base = next(r for r in rows if r.row == against)  # every row is done (above)
    others = [r for r in rows if r is not base]
    m = len(others) * len(ACHIEVEMENTS)
    lines = [
        "",
        f"**{table.table}: each row − {base.row}, success rate points per achievement, with "
        f"the unadjusted two-sided Welch p. {m} comparisons: about {0.05 * m:.1f} below 0.05 "
        f"are expected by chance with no true difference; Bonferroni's threshold is "
        f"{0.05 / m:.2g}. Descriptive: no finding is drawn from one of them.**",
        "",
        "| Achievement | " + " | ".join(r.row for r in others) + " |",
        "|" + "---|" * (len(others) + 1),
    ]
    for achievement in ACHIEVEMENTS:
        b = [run.success_rates[achievement] for run in base.runs]
        cells = []
        for row in others:
            a = [run.success_rates[achievement] for run in row.runs]
            diff = float(np.mean(a) - np.mean(b))
            p = welch_test(a, b).p
            cells.append(f"{diff:+.2f} (p {p:.2g})" if not math.isnan(p) else f"{diff:+.2f}")
        lines.append(f"| {achievement} | " + " | ".join(cells) + " |")
    return lines


def _pm(mean: float, std: float) -> str:
    return f"{mean:.2f}" if math.isnan(std) else f"{mean:.2f} ± {std:.2f}"
