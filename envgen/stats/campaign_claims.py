"""The campaigns' own claims: does arm a of a campaign beat its arm b?

A campaign (`envgen campaign`) tests what its machines can train (a non-LLM or open local
designer, the `nature` network), not the paper's claim, so its claims do not compare our
difference with the paper's; they ask whether a beats b (docs/stats.md, "Campaign
claims"): a one-sided Welch test of a > b at alpha / m, m = the claims of its family
(fixed, so a verdict does not move when another claim becomes testable). No difference
detected says what the data rule out: effects at or above the one-sided upper bound, and
whether the paper's difference (and its gain scaled to our baseline) is among them; a
registration may ask a better verdict to say it too (`Registration.after_better`). The
power beside it is a planning figure, from simulating the test itself. Families
(`envgen.stats.campaign_spec.Family`) are planned, post hoc or registered (verdict
withheld until every planned run is in)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from numpy.typing import ArrayLike

from envgen.stats.campaign_spec import CampaignClaim, Registration
from envgen.stats.compare import hedges_g_from_stats, welch_from_stats
from envgen.stats.intervals import welch_interval
from envgen.stats.paper_claims import Claim, PaperNumbers, assumed_population
from envgen.stats.power import simulated_welch_power
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA, PaperEffect

NO_DIFFERENCE = "no difference detected"
WORSE = "worse"
NOT_ENOUGH = "not enough runs"
INTERIM = "interim"
WITHHELD = "registered verdict withheld"
POWER_SIMS = 100_000
"""Simulated campaigns per power figure (its standard error is at most 0.0016)."""


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
    """alpha / m, m = the family's claims."""
    p_adj: float
    """Bonferroni-adjusted one-sided p of a > b; NaN when not testable."""
    bounds: tuple[float, float]
    """One-sided (1 - level) bounds of a - b: a lower (for better) and an upper (for worse)."""
    g: float
    """Hedges' g of a - b; NaN when not testable."""
    paper_diff: float
    """The paper's a - b for `claim.paper` (context only)."""
    scaled_diff: float
    """The paper's relative gain (a - b) / b on the score, scaled to our b's mean (context
    only); NaN for per-achievement rates and where the paper gives no b."""
    power: float
    """A planning figure: the simulated power of our one-sided test at `level`, with our
    run counts, for the paper's difference (`simulated_welch_power`); NaN where the paper
    reports no spread (its per-achievement rates)."""
    verdict: str
    reason: str
    withheld: bool = False
    """A registered claim before every planned run is in: only the run counts are shown."""

    @property
    def runs(self) -> tuple[int, int]:
        """Finished runs of a and of b."""
        return tuple(s.n if s else 0 for s in (self.ours_a, self.ours_b))  # type: ignore[return-value]


def evaluate_campaign(
    claims: Sequence[CampaignClaim],
    runs: Mapping[str, Mapping[str, ArrayLike]],
    planned: Mapping[str, int],
    paper: PaperNumbers,
    alpha: float = ALPHA,
    registered: bool = False,
) -> list[CampaignResult]:
    """Verdicts of one family of a campaign's claims. `runs`: {metric: {row label: values,
    shape (n_runs,)}}, metric as `CampaignClaim.metric` (a row without finished runs may
    be absent); `planned`: {row label: planned runs}; `registered`: withhold every
    result until every planned run is in (`Family.registered`)."""
    level = alpha / max(1, len(claims))
    return [_evaluate(c, runs, planned, paper, level, len(claims), registered) for c in claims]


def _evaluate(
    claim: CampaignClaim,
    runs: Mapping[str, Mapping[str, ArrayLike]],
    planned: Mapping[str, int],
    paper: PaperNumbers,
    level: float,
    m: int,
    registered: bool,
) -> CampaignResult:
    by_row = runs.get(claim.metric, {})
    a, b = (_stats(by_row, label) for label in (claim.a, claim.b))
    nan = math.nan
    pa, pb, effect = (None, None, PaperEffect(nan)) if claim.paper is None else paper.effect(
        Claim(claim.name, *claim.paper, claim.metric))  # fmt: skip
    assert effect.diff is not None
    paper_diff = effect.diff
    result = CampaignResult(
        claim, a, b, (planned.get(claim.a, 0), planned.get(claim.b, 0)), level, nan,
        (nan, nan), nan, paper_diff, nan, nan, NOT_ENOUGH, "",
    )  # fmt: skip
    done = result.runs
    if registered and (done[0] < result.planned[0] or done[1] < result.planned[1]):
        word = f"{WITHHELD}: {sum(done)} of {sum(result.planned)} runs"
        reason = "registered: a verdict only when every planned run is in"
        return dataclasses.replace(result, verdict=word, reason=reason, withheld=True)
    if a is None or b is None or a.n < 2 or b.n < 2:
        counts = [f"{k} of {n}" for k, n in zip(done, result.planned, strict=True)]
        word = f"{NOT_ENOUGH} ({counts[0]} and {counts[1]})"
        return dataclasses.replace(
            result, verdict=word, reason="Welch needs at least 2 finished runs per arm"
        )
    test = welch_from_stats(a, b)
    p_one = test.p / 2 if test.t > 0 else 1 - test.p / 2
    low, high = welch_interval(a, b, 1 - 2 * level)  # one-sided 1 - level bounds
    power = nan  # Figure 4's rates come without a spread: no population to assume
    if pa is not None and pb is not None:
        sd_a, sd_b = assumed_population(pa, a).std, assumed_population(pb, b).std
        power = simulated_welch_power(paper_diff, sd_a, sd_b, a.n, level, POWER_SIMS, n_b=b.n)
    # The paper's relative gain on our baseline: for the score, not for per-achievement
    # rates, whose ratios near 0% mean nothing (Figure 4's iron tools: 0.07% -> 0.67%).
    scaled = b.mean * paper_diff / pb.mean if pb is not None and pb.mean else nan
    bound = f"one-sided {100 * (1 - level):.3g}% bounds [{low:+.3g}, {high:+.3g}]"
    if low > 0:
        word, reason = claim.better, f"a - b >= {low:+.3g} ({bound})"
    elif high < 0:
        word, reason = WORSE, f"a - b <= {high:+.3g} ({bound})"
    elif a.std == b.std == 0:  # e.g. an achievement no run of either arm unlocked
        word = f"{NO_DIFFERENCE} (every run of both arms at {a.mean:.2f}: nothing varies)"
        reason = f"{bound} hold 0"
    else:
        word = f"{NO_DIFFERENCE}; {rules_out(high, paper_diff, scaled)}"
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
        scaled_diff=scaled,
        power=power,
        verdict=word,
        reason=reason,
    )


def rules_out(high: float, paper_diff: float, scaled: float) -> str:
    """What a one-sided upper bound rules out: every effect at or above it, hence the
    paper's difference and its scaled gain where they lie above it (and only there);
    without a paper difference (NaN), the bound alone."""
    if math.isnan(paper_diff):
        return f"rules out {high:+.2f} or more"
    refs = [(f"the paper's {paper_diff:+.1f}", paper_diff)]
    if not math.isnan(scaled):
        refs.append((f"its {scaled:+.2f} scaled to our baseline", scaled))
    out = [text for text, x in refs if high < x]
    kept = [text for text, x in refs if high >= x]
    if not kept:
        which = " and ".join(out)
    elif not out:
        which = f"neither {' nor '.join(kept)}" if len(kept) > 1 else f"not {kept[0]}"
    else:
        which = f"{' and '.join(out)}, not {' nor '.join(kept)}"
    return f"rules out {high:+.2f} or more: {which}"


def registered_sentence(
    r: CampaignResult, references: Sequence[tuple[str, float]], registration: Registration
) -> str:
    """The verdict in the words `registration` registered (its document's "Verdicts")."""
    if r.withheld or r.ours_a is None or r.ours_b is None or math.isnan(r.bounds[0]):
        return r.verdict
    a, b = r.ours_a, r.ours_b
    diff, (low, high) = a.mean - b.mean, r.bounds
    conf = f"{100 * (1 - r.level):.3g}%"
    runs = registration.runs.format(a=a.n, b=b.n)
    runs_otherwise = (registration.runs_otherwise or registration.runs).format(a=a.n, b=b.n)
    what, against = registration.subject, registration.against
    # The registered words are the score's; a secondary test on an achievement's rate
    # (S2) says which outcome it is.
    rate = (
        "" if r.claim.metric == "score" else f"the {r.claim.metric.split(':', 1)[1]} success rate"
    )
    on = f" on {rate}" if rate else ""
    if low > 0:
        coda = registration.coda.format(rate=rate or "the Crafter score")
        better = (
            f"better: {what} scored {diff:+.2f} points above {against}{on} (one-sided "
            f"{conf} lower bound {low:+.2f}, p = {r.p_adj:.3g}; {runs}). {coda}"
        )
        said = [(w, x) for w, x in references if w in registration.after_better]
        if rate or not said:  # the paper references are score differences
            return better
        return f"{better} The data rule out an effect of {high:+.2f} or more{_ruled(high, said)}."
    if high < 0:
        return (
            f"worse: {what} scored {abs(diff):.2f} points below {against}{on} (one-sided "
            f"{conf} upper bound {high:+.2f}; {runs_otherwise})."
        )
    return (
        f"no difference detected{on}: {diff:+.2f} points (one-sided {conf} bounds "
        f"[{low:+.2f}, {high:+.2f}], p = {r.p_adj:.3g}; {runs_otherwise}). The data rule out "
        f"an effect of {high:+.2f} or more{_ruled(high, references)}."
    )


def _ruled(high: float, references: Sequence[tuple[str, float]]) -> str:
    """The registered clause per reference X: "; it rules out +X (what X is)" when the
    one-sided upper bound `high` lies below X, else "; it does not rule out +X (...)"."""
    return "".join(
        f"; it {'rules out' if high < x else 'does not rule out'} {x:+.2f} ({label})"
        for label, x in references
    )


def _stats(runs: Mapping[str, ArrayLike], label: str) -> SampleStats | None:
    values = runs.get(label)
    if values is None or len(values) == 0:  # type: ignore[arg-type]
        return None
    return SampleStats.of(values, f"runs[{label!r}]")
