"""The verdict rule: our interval for a - b read against the paper's difference (docs/stats.md).

A claim is oriented so the paper finds a - b > 0. Our Welch interval for a - b, at the
family's Bonferroni level, is read against that difference: wholly below 0 is the
opposite, wholly below the paper's difference is smaller than reported, above 0 and
reaching the paper's difference is reproduced, anything else inconclusive. Where the
paper's own numbers do not separate a and b (a tie), the question is equivalence, asked
with two one-sided tests (TOST) against a margin taken from the paper's numbers.
"""

from __future__ import annotations

import dataclasses
import math

import scipy.stats

from envgen.stats.compare import welch_df, welch_from_stats
from envgen.stats.intervals import welch_interval
from envgen.stats.runs import SampleStats

# Profiles whose runs may reproduce or contradict a claim: the paper's budgets (1.96M
# Crafter steps, 30 runs). Any other profile (e.g. "smoke") is inconclusive by rule.
CLAIM_GRADE_PROFILES: frozenset[str] = frozenset({"paper"})

ALPHA = 0.05  # family-wise error rate across the claims evaluated together

REPRODUCED = "reproduced"
SMALLER = "smaller than reported"
OPPOSITE = "opposite"
NOT_A_TIE = "not a tie"
INCONCLUSIVE = "inconclusive"


@dataclasses.dataclass(frozen=True)
class PaperEffect:
    """What the paper says about a - b."""

    diff: float | None
    """a - b as the paper reports it (> 0); None where the paper gives a direction only."""
    tie_margin: float | None = None
    """Set when the paper's own numbers do not separate a and b: the equivalence margin."""


def tie_margin(a: SampleStats, b: SampleStats, alpha: float = ALPHA) -> float | None:
    """The paper's a - b is a tie when its own Welch test gives p >= alpha; then the margin.
    The margin is the largest |a - b| the paper's numbers are compatible with (the far bound
    of its 1 - alpha Welch interval): we reproduce the tie when our runs rule out any larger
    difference. None when the paper's numbers separate the rows."""
    if welch_from_stats(a, b).p < alpha:
        return None
    low, high = welch_interval(a, b, 1 - alpha)
    return max(abs(low), abs(high))


def tost_p(a: SampleStats, b: SampleStats, margin: float) -> float:
    """Two one-sided Welch tests of |mean(a) - mean(b)| < margin; the larger p. NaN if n < 2."""
    if a.n < 2 or b.n < 2:
        return math.nan
    diff = a.mean - b.mean
    se = math.sqrt(a.std**2 / a.n + b.std**2 / b.n)
    if se == 0:
        return 0.0 if abs(diff) < margin else 1.0
    df = welch_df(a, b)
    p_low = scipy.stats.t.sf((diff + margin) / se, df)  # H0: diff <= -margin
    p_high = scipy.stats.t.cdf((diff - margin) / se, df)  # H0: diff >= +margin
    return float(max(p_low, p_high))


def verdict(
    *, profile: str, ours: tuple[SampleStats, SampleStats], paper: PaperEffect, level: float
) -> tuple[str, str]:
    """(verdict, reason); the first line of the rule that applies decides. `level`: the
    per-claim level, alpha / (testable claims in the family) (Bonferroni).
    1. profile not claim-grade -> inconclusive; 2. a row with < 2 runs -> inconclusive;
    3. a tie: TOST p < level -> reproduced, interval outside +/- margin -> not a tie,
    else inconclusive; 4. interval below 0 -> opposite; 5. interval below the paper's
    difference -> smaller than reported; 6. interval above 0 -> reproduced; 7. inconclusive.
    """
    if profile not in CLAIM_GRADE_PROFILES:
        grade = ", ".join(sorted(CLAIM_GRADE_PROFILES))
        return INCONCLUSIVE, f"profile {profile!r} is not claim-grade (claim-grade: {grade})"
    a, b = ours
    if a.n < 2 or b.n < 2:
        return INCONCLUSIVE, f"untestable: {a.n} and {b.n} runs (Welch needs >= 2 per row)"
    conf = f"{100 * (1 - level):.3g}%"
    low, high = welch_interval(a, b, 1 - level)
    ci = f"our {conf} CI [{low:+.3g}, {high:+.3g}]"
    if paper.tie_margin is not None:
        return _tie(a, b, paper.tie_margin, level, ci)
    if high < 0:
        return OPPOSITE, f"{ci} lies below 0: the paper's direction is reversed"
    if paper.diff is not None and high < paper.diff:
        return SMALLER, f"{ci} lies below the paper's {paper.diff:+.3g}"
    if low > 0:
        reach = "" if paper.diff is None else f" and reaches the paper's {paper.diff:+.3g}"
        return REPRODUCED, f"{ci} lies above 0{reach}"
    paper_part = "" if paper.diff is None else f" and the paper's {paper.diff:+.3g}"
    return INCONCLUSIVE, f"{ci} holds both 0{paper_part}"


def _tie(a: SampleStats, b: SampleStats, margin: float, level: float, ci: str) -> tuple[str, str]:
    p = tost_p(a, b, margin)
    if p < level:
        return (
            REPRODUCED,
            f"a tie, as in the paper: TOST p = {p:.3g} < {level:.3g} for ±{margin:.3g}",
        )
    low, high = welch_interval(a, b, 1 - level)
    if low > margin or high < -margin:
        return NOT_A_TIE, f"the paper's tie is within ±{margin:.3g}; {ci} lies outside it"
    return INCONCLUSIVE, f"TOST p = {p:.3g} >= {level:.3g} for the paper's tie margin ±{margin:.3g}"
