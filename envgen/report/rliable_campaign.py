"""rliable's views of one campaign (`envgen.stats.rliable_views`): its arms, the pairs it
compares, and the descriptive line CLAIMS.md prints under its claims.

Its arms are its finished rows, each a runs x tasks matrix of the score (one task) and
of the achievements' success rates (%); its pairs are the (a, b) of its claims, or every
pair of rows when it has none. A registered campaign shows them only with its verdict.
The figure is `envgen.report.figures.rliable_figure`.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from envgen.report.inputs import DONE, TableRecord
from envgen.scoring import ACHIEVEMENTS
from envgen.stats.campaign_spec import by_table, families
from envgen.stats.rliable_views import (
    CONFIDENCE,
    REPS,
    SEED,
    compare,
    improvement_probability,
    iqm_difference,
    iqm_interval,
)
from envgen.stats.summary import Interval

SCORE, ACHIEVEMENT_RATES = "score", "achievements"
VIEWS = {
    SCORE: "the Crafter score (%)",
    ACHIEVEMENT_RATES: f"the {len(ACHIEVEMENTS)} achievements' success rates (%)",
}
WHERE = {SCORE: "on the score", ACHIEVEMENT_RATES: "over the achievements"}
"""How a P(a > b) names its view."""


@dataclasses.dataclass(frozen=True)
class CampaignArms:
    """One campaign's finished arms as rliable's matrices, and the pairs it compares."""

    table: str
    """The campaign's table id."""
    arms: dict[str, dict[str, np.ndarray]]
    """{view (`VIEWS`): {row label: matrix of shape (n_runs, n_tasks)}}."""
    pairs: tuple[tuple[str, str], ...]
    """(a, b) row labels, each compared as a vs b."""


def campaign_arms(table: TableRecord) -> CampaignArms:
    """The table's finished rows as matrices (rows without runs left out)."""
    done = [r for r in table.rows if r.status == DONE and r.runs]
    arms = {
        SCORE: {r.row: np.array([[run.score] for run in r.runs]) for r in done},
        ACHIEVEMENT_RATES: {
            r.row: np.array([[run.success_rates[a] for a in ACHIEVEMENTS] for run in r.runs])
            for r in done
            if all(run.success_rates for run in r.runs)  # Heist runs have none
        },
    }
    labels = [r.row for r in done]
    claimed = [(c.a, c.b) for family in families(table.table) for c in family.claims]
    pairs = claimed or list(itertools.combinations(labels, 2))
    kept = tuple(dict.fromkeys(p for p in pairs if p[0] in labels and p[1] in labels))
    return CampaignArms(table.table, arms, kept)


def claims_line(table: TableRecord, withheld: str | None) -> str:
    """CLAIMS.md's descriptive line: each arm's IQM and each pair's IQM difference and
    P(a > b), with their intervals (`withheld`: a registered campaign's "k of n runs")."""
    # When the views were chosen, relative to the campaign's data (`rliable_when`)
    spec = by_table(table.table)
    when = f"; {spec.rliable_when}" if spec and spec.rliable_when else ""
    head = (
        "rliable's views, descriptive (Agarwal et al. 2021; docs/stats.md, \"rliable's "
        f'views"; the tests above stay the primary{when}): '
    )
    if withheld is not None:
        return f"{head}given with the registered verdict ({withheld})."
    c = campaign_arms(table)
    if len(c.arms[SCORE]) < 1:
        return f"{head}no finished row yet."
    conf = f"{100 * CONFIDENCE:.0f}%"
    iqms = [
        f"IQM of {VIEWS[view]}: "
        + "; ".join(
            f"{row} {_fmt(iqm_interval(m, name=f'{table.table}: {row}'))}"
            for row, m in matrices.items()
        )
        for view, matrices in c.arms.items()
        if matrices
    ]
    parts = [
        f"interquartile mean (IQM) and P(a > b), each with its {conf} stratified-bootstrap "
        f"percentile interval in brackets ({REPS:,} resamples, seed {SEED})",
        *iqms,
    ]
    for a, b in c.pairs:
        diff = compare(iqm_difference, *_pair(c, SCORE, a, b), names=(a, b))
        better = [
            f"{WHERE[view]} "
            + _fmt(compare(improvement_probability, *_pair(c, view, a, b), names=(a, b)))
            for view in VIEWS
            if a in c.arms[view] and b in c.arms[view]
        ]
        parts.append(
            f"{a} (a) vs {b} (b): IQM difference of the score {_fmt(diff, '+.2f')}, "
            f"P(a > b) {', '.join(better)}"
        )
    return head + ". ".join(parts) + f". Figure: paper_figures/rliable_{table.table}.png."


def _pair(c: CampaignArms, view: str, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    return c.arms[view][a], c.arms[view][b]


def _fmt(x: Interval, fmt: str = ".2f") -> str:
    if np.isnan(x.low):
        return f"{x.point:{fmt}} (one run: no interval)"
    return f"{x.point:{fmt}} [{x.low:{fmt}}, {x.high:{fmt}}]"
