"""The campaigns' own claims: does EnvGen's schedule with designer D beat Crafter-only?

A campaign (`envgen campaign`, e.g. replication/campaign_cpu.yaml) tests what its
machines can: EnvGen's schedule with a non-LLM designer vs Crafter-only, with the
`nature` network. That is not the paper's claim (GPT-4-Turbo designer, the paper's
network), so these claims do not compare our difference with the paper's; they ask
plainly whether a beats b (docs/stats.md, "Campaign claims"): a one-sided Welch test
of a > b at alpha / m, m = the claims of its family (Bonferroni, fixed so a verdict does
not move when another claim becomes testable). The paper's difference appears only as
context, and as the effect the power is computed for.

A campaign's claims come in families, each Bonferroni-corrected on its own, as the
paper's do: the score, and Figure 4's achievements (the five whose gains the paper's
text names, `FIGURE4_ACHIEVEMENTS`: fixed by the paper, not picked from our runs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from numpy.typing import ArrayLike

from envgen.stats.claims import (
    CRAFTER_ONLY,
    ENVGEN,
    FIGURE4_ACHIEVEMENTS,
    FIXED,
    SUCCESS,
    Claim,
    PaperNumbers,
    assumed_population,
)
from envgen.stats.compare import hedges_g_from_stats, welch_from_stats, welch_power
from envgen.stats.intervals import welch_interval
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA

NO_DIFFERENCE = "no difference detected"
WORSE = "worse"
NOT_ENOUGH = "not enough runs"
INTERIM = "interim"
CAMPAIGN_CPU_CRAFTER_ONLY = "PPO 1.96M Crafter only"


@dataclasses.dataclass(frozen=True)
class CampaignClaim:
    """a beats b on the score, with the paper's pair that gives it context."""

    name: str
    """The claim in words."""
    a: str
    """Row label (the campaign's replication file) of the arm claimed higher."""
    b: str
    """Row label of the arm it is compared with."""
    context: tuple[str, str]
    """The paper's (a, b) labels whose difference is shown beside ours, as context."""
    better: str = "EnvGen schedule better"
    """The verdict when a beats b."""
    metric: str = "score"
    """"score", or "success_rate:<achievement>" (% of final-phase episodes)."""


def _vs_crafter(designer: str, row: str) -> CampaignClaim:
    return CampaignClaim(
        f"{designer}, EnvGen schedule > Crafter-only",
        row,
        CAMPAIGN_CPU_CRAFTER_ONLY,
        (ENVGEN, CRAFTER_ONLY),
    )


# {campaign table id: its score claims}: one Bonferroni family.
CAMPAIGN_CLAIMS: dict[str, tuple[CampaignClaim, ...]] = {
    "campaign_cpu": (
        _vs_crafter("Heuristic designer", "Heuristic designer: EnvGen schedule"),
        _vs_crafter("Domain randomization", "Domain randomization: EnvGen schedule"),
        CampaignClaim(
            "Heuristic designer, Fixed (no adaptation) > Crafter-only",
            "Heuristic designer: Fixed",
            CAMPAIGN_CPU_CRAFTER_ONLY,
            (FIXED, CRAFTER_ONLY),
            "Fixed schedule better",
        ),
        CampaignClaim(
            "Heuristic designer, adaptive EnvGen schedule > Fixed",
            "Heuristic designer: EnvGen schedule",
            "Heuristic designer: Fixed",
            (ENVGEN, FIXED),
            "adaptation better",
        ),
    ),
}


# {campaign table id: its Figure 4 claims}: the adaptive heuristic row against Crafter-only
# on each achievement the paper names, a second Bonferroni family.
CAMPAIGN_ACHIEVEMENT_CLAIMS: dict[str, tuple[CampaignClaim, ...]] = {
    "campaign_cpu": tuple(
        CampaignClaim(
            f"Heuristic designer, EnvGen schedule > Crafter-only: {a} success",
            "Heuristic designer: EnvGen schedule",
            CAMPAIGN_CPU_CRAFTER_ONLY,
            (ENVGEN, CRAFTER_ONLY),
            metric=f"{SUCCESS}:{a}",
        )
        for a in FIGURE4_ACHIEVEMENTS
    ),
}
# Families in CLAIMS.md's order, with their headings.
CAMPAIGN_FAMILIES: dict[str, dict[str, tuple[CampaignClaim, ...]]] = {
    "Score": CAMPAIGN_CLAIMS,
    "Figure 4's achievements (success rate %)": CAMPAIGN_ACHIEVEMENT_CLAIMS,
}


@dataclasses.dataclass(frozen=True)
class CampaignResult:
    """Our evidence on one campaign claim, and its verdict."""

    claim: CampaignClaim
    ours_a: SampleStats | None
    """Our finished runs of a; None without any."""
    ours_b: SampleStats | None
    planned: tuple[int, int]
    """Runs each arm plans (the campaign's seeds)."""
    level: float
    """alpha / m, m = the campaign's claims."""
    p_adj: float
    """Bonferroni-adjusted one-sided p of a > b; NaN when not testable."""
    bounds: tuple[float, float]
    """One-sided (1 - level) bounds of a - b: a lower (for better) and an upper (for worse)."""
    g: float
    """Hedges' g of a - b; NaN when not testable."""
    paper_diff: float
    """The paper's a - b for `claim.context` (context only)."""
    power: float
    """Power of our one-sided test, at `level` with our runs, for the paper's difference;
    NaN where the paper reports no spread (its per-achievement rates)."""
    verdict: str
    reason: str


def evaluate_campaign(
    claims: Sequence[CampaignClaim],
    runs: Mapping[str, Mapping[str, ArrayLike]],
    planned: Mapping[str, int],
    paper: PaperNumbers,
    alpha: float = ALPHA,
) -> list[CampaignResult]:
    """Verdicts of one family of a campaign's claims. `runs`: {metric: {row label: values,
    shape (n_runs,)}}, metric as `CampaignClaim.metric` (a row without finished runs may
    be absent); `planned`: {row label: planned runs}."""
    level = alpha / max(1, len(claims))
    return [_evaluate(c, runs, planned, paper, level, len(claims)) for c in claims]


def _evaluate(
    claim: CampaignClaim,
    runs: Mapping[str, Mapping[str, ArrayLike]],
    planned: Mapping[str, int],
    paper: PaperNumbers,
    level: float,
    m: int,
) -> CampaignResult:
    by_row = runs.get(claim.metric, {})
    a, b = (_stats(by_row, label) for label in (claim.a, claim.b))
    pa, pb, effect = paper.effect(Claim(claim.name, *claim.context, claim.metric))
    assert effect.diff is not None
    nan = math.nan
    result = CampaignResult(
        claim, a, b, (planned.get(claim.a, 0), planned.get(claim.b, 0)), level, nan,
        (nan, nan), nan, effect.diff, nan, NOT_ENOUGH, "",
    )  # fmt: skip
    if a is None or b is None or a.n < 2 or b.n < 2:
        counts = [f"{s.n if s else 0} of {n}" for s, n in zip((a, b), result.planned, strict=True)]
        word = f"{NOT_ENOUGH} ({counts[0]} and {counts[1]})"
        return dataclasses.replace(
            result, verdict=word, reason="Welch needs at least 2 finished runs per arm"
        )
    test = welch_from_stats(a, b)
    p_one = test.p / 2 if test.t > 0 else 1 - test.p / 2
    low, high = welch_interval(a, b, 1 - 2 * level)  # one-sided 1 - level bounds
    power = (
        welch_power(assumed_population(pa, a), assumed_population(pb, b), a.n, b.n, 2 * level)
        if pa is not None and pb is not None
        else nan  # Figure 4's rates come without a spread: no population to assume
    )
    bound = f"one-sided {100 * (1 - level):.3g}% bounds [{low:+.3g}, {high:+.3g}]"
    if low > 0:
        word, reason = claim.better, f"a - b >= {low:+.3g} ({bound})"
    elif high < 0:
        word, reason = WORSE, f"a - b <= {high:+.3g} ({bound})"
    elif a.std == b.std == 0:  # e.g. an achievement no run of either arm unlocked
        word = f"{NO_DIFFERENCE} (every run of both arms at {a.mean:.2f}: nothing varies)"
        reason = f"{bound} hold 0"
    else:
        word = f"{NO_DIFFERENCE} ({_power_words(power, effect.diff)})"
        reason = f"{bound} hold 0"
    if a.n < result.planned[0] or b.n < result.planned[1]:
        # The rule is fixed for the planned seeds; a verdict on fewer is read, not acted on
        # (stopping a campaign early on a good interim result would inflate its error).
        word = f"{INTERIM} ({a.n} of {result.planned[0]} and {b.n} of {result.planned[1]}): {word}"
    return dataclasses.replace(
        result,
        p_adj=min(1.0, m * p_one),
        bounds=(low, high),
        g=hedges_g_from_stats(a, b),
        power=power,
        verdict=word,
        reason=reason,
    )


def _power_words(power: float, paper_diff: float) -> str:
    if math.isnan(power):
        return f"no power: the paper's {paper_diff:+.2g} point effect comes without a spread"
    return f"power {power:.2f} for the paper's {paper_diff:+.1f} point effect"


def _stats(runs: Mapping[str, ArrayLike], label: str) -> SampleStats | None:
    values = runs.get(label)
    if values is None or len(values) == 0:  # type: ignore[arg-type]
        return None
    return SampleStats.of(values, f"runs[{label!r}]")
