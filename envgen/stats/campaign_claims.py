"""The campaigns' own claims: does EnvGen's schedule with designer D beat Crafter-only,
or (llm15, sfl) an adaptive designer beat domain randomization?

A campaign (`envgen campaign`, e.g. replication/campaign_cpu.yaml) tests what its
machines can: EnvGen's schedule with a non-LLM designer or an open local LLM vs
Crafter-only or domain randomization, with the `nature` network. That is not the paper's
claim (GPT-4-Turbo designer, the paper's network), so these claims do not compare our
difference with the paper's; they ask plainly whether a beats b (docs/stats.md,
"Campaign claims"): a one-sided Welch test of a > b at alpha / m, m = the claims of its
family (Bonferroni, fixed so a verdict does not move when another claim becomes
testable). A claim with no difference detected says what the data rule out: effects at
or above the one-sided upper bound, and whether the paper's difference (and its relative
gain scaled to our baseline) is among them. The power beside it is a planning figure,
from simulating the test itself.

A campaign's claims come in families (`Family`), each Bonferroni-corrected on its own,
as the paper's are. A family is planned before the campaign's runs, added after some
were seen (`Family.post_hoc` says when and why), or registered (`Family.registered`,
with its document and verdict words in `REGISTRATIONS`: docs/campaign_confirm.md,
docs/campaign_llm15.md, docs/campaign_sfl.md; its verdict withheld until every planned run
is in).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from numpy.typing import ArrayLike

from envgen.stats.compare import hedges_g_from_stats, welch_from_stats
from envgen.stats.intervals import welch_interval
from envgen.stats.paper_claims import (
    CRAFTER_ONLY,
    ENVGEN,
    FIGURE4_ACHIEVEMENTS,
    FIXED,
    SUCCESS,
    Claim,
    PaperNumbers,
    assumed_population,
)
from envgen.stats.power import simulated_welch_power
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA

NO_DIFFERENCE = "no difference detected"
WORSE = "worse"
NOT_ENOUGH = "not enough runs"
INTERIM = "interim"
WITHHELD = "registered verdict withheld"
CAMPAIGN_CPU_CRAFTER_ONLY = "PPO 1.96M Crafter only"
DOMAIN_RANDOMIZATION = "Domain randomization: EnvGen schedule"
POWER_SIMS = 100_000
"""Simulated campaigns per power figure (its standard error is at most 0.0016)."""


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


@dataclasses.dataclass(frozen=True)
class Family:
    """Claims tested together, Bonferroni within the family."""

    heading: str
    """CLAIMS.md's heading of the family."""
    claims: tuple[CampaignClaim, ...]
    registered: bool = False
    """Registered before any of its runs: no verdict, difference, bound or p until every
    planned run of its arms is in ("registered verdict withheld: k of n runs")."""
    post_hoc: str = ""
    """When, relative to the runs, and why the family was added after runs had been
    seen; "" for a family fixed before the campaign's runs."""


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
        _vs_crafter("Domain randomization", DOMAIN_RANDOMIZATION),
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
FIGURE4_POST_HOC = (
    "Post hoc: added on 2026-11-24, when 19 of the 20 runs had finished and been seen "
    "(every Crafter-only and heuristic run; domain randomization seed 4 not yet). The five "
    "achievements are the paper's (Figure 4, the gains its text names), not picked from "
    "our runs. It tests the heuristic designer's adaptive EnvGen schedule because that is "
    "the campaign's arm closest to the paper's PPO + EnvGen, whose gains Figure 4 shows: "
    "a designer that adapts worlds to the agent's measured skills."
)

# The registered confirmatory campaign (docs/campaign_confirm.md): H1 and S2.
H1 = CampaignClaim(
    "H1: Domain randomization, EnvGen schedule > Crafter-only",
    DOMAIN_RANDOMIZATION,
    CAMPAIGN_CPU_CRAFTER_ONLY,
    (ENVGEN, CRAFTER_ONLY),
    "better",
)
S2 = dataclasses.replace(
    H1,
    name="S2: Domain randomization, EnvGen schedule > Crafter-only: place_furnace success",
    metric=f"{SUCCESS}:place_furnace",
)

# The registered campaign llm15 (docs/campaign_llm15.md): its primary test H1.
LLM15_DESIGNER = "EnvGen: Qwen2.5-Coder-1.5B designer"
H1_LLM15 = CampaignClaim(
    "H1: EnvGen with the 1.5B LLM designer > domain randomization, EnvGen schedule",
    LLM15_DESIGNER,
    DOMAIN_RANDOMIZATION,
    (ENVGEN, FIXED),
    "better",
)

# The registered campaign sfl (docs/campaign_sfl.md): its primary test H1.
SFL_ROW = "SFL: EnvGen schedule"
H1_SFL = CampaignClaim(
    "H1: SFL > domain randomization, EnvGen schedule (rollouts in the budget)",
    SFL_ROW,
    DOMAIN_RANDOMIZATION,
    (ENVGEN, FIXED),
    "better",
)

# The registered campaign headline (docs/campaign_headline.md): its primary test H1, the
# paper's first claim with the open designer.
H1_HEADLINE = CampaignClaim(
    "H1: EnvGen with the 1.5B LLM designer > Crafter-only, the same 1.96M steps",
    LLM15_DESIGNER,
    CAMPAIGN_CPU_CRAFTER_ONLY,
    (ENVGEN, CRAFTER_ONLY),
    "better",
)


@dataclasses.dataclass(frozen=True)
class Registration:
    """A registered campaign's document and the words its "Verdicts" fixed."""

    document: str
    """The registration, committed before any of the campaign's runs."""
    primary: CampaignClaim
    """H1, the claim whose verdict is the campaign's answer."""
    subject: str
    """What arm a is, as the verdict sentences name it."""
    against: str
    """What arm b is, as they name it."""
    runs: str
    """The run counts' words ({a}, {b}: the arms' runs), in the better verdict."""
    coda: str
    """The better verdict's closing sentence ({rate}: the outcome)."""
    paper_references: tuple[tuple[str, str, str], ...] = ()
    """(words, paper row a, paper row b): the paper's differences a no-difference verdict
    says it rules out or not (none: the report's own, as confirm registered them)."""
    runs_otherwise: str = ""
    """The run counts' words in the worse and no-difference verdicts ("": as `runs`)."""


REGISTRATIONS: dict[str, Registration] = {
    "campaign_confirm": Registration(
        "docs/campaign_confirm.md",
        H1,
        "domain randomization on EnvGen's schedule",
        "Crafter-only",
        "{a} + {b} fresh seeds",
        "Diverse worlds alone, on EnvGen's schedule, raised {rate} of the nature network on CPU.",
    ),
    "campaign_llm15": Registration(
        "docs/campaign_llm15.md",
        H1_LLM15,
        "EnvGen with the 1.5B LLM designer",
        "domain randomization on the same schedule",
        "{a} + {b} seeds, both arms trained in this campaign",
        "An adaptive LLM designer added to varied worlds for the nature network on CPU.",
        paper_references=(
            ("the paper's PPO + EnvGen − Fixed", ENVGEN, FIXED),
            ("the paper's PPO + EnvGen − Crafter-only", ENVGEN, CRAFTER_ONLY),
        ),
        runs_otherwise="{a} + {b} seeds",
    ),
    "campaign_sfl": Registration(
        "docs/campaign_sfl.md",
        H1_SFL,
        "SFL on EnvGen's schedule",
        "domain randomization on the same schedule",
        "{a} + {b} seeds, both arms trained in this campaign, SFL's rollouts in its 1.96M steps",
        "Choosing the worlds by the agent's own rollouts added to randomly drawn worlds for the "
        "nature network on CPU.",
        paper_references=(
            ("the paper's PPO + EnvGen − Fixed", ENVGEN, FIXED),
            ("the paper's PPO + EnvGen − Crafter-only", ENVGEN, CRAFTER_ONLY),
        ),
        runs_otherwise="{a} + {b} seeds",
    ),
    "campaign_headline": Registration(
        "docs/campaign_headline.md",
        H1_HEADLINE,
        "PPO + EnvGen with the 1.5B LLM designer",
        "PPO with the same 1.96M steps in Crafter alone",
        "{a} + {b} seeds, both arms trained in this campaign",
        "Training in LLM-designed worlds beat training in Crafter alone for the nature network "
        "on CPU.",
        paper_references=(
            ("the paper's PPO + EnvGen − Crafter-only", ENVGEN, CRAFTER_ONLY),
            ("the paper's PPO + EnvGen − Fixed", ENVGEN, FIXED),
        ),
        runs_otherwise="{a} + {b} seeds",
    ),
}

# {campaign table id: its families, in CLAIMS.md's order}.
CAMPAIGN_FAMILIES: dict[str, tuple[Family, ...]] = {
    "campaign_cpu": (
        Family("Score", CAMPAIGN_CLAIMS["campaign_cpu"]),
        Family(
            "Figure 4's achievements (success rate %), post hoc",
            CAMPAIGN_ACHIEVEMENT_CLAIMS["campaign_cpu"],
            post_hoc=FIGURE4_POST_HOC,
        ),
    ),
    "campaign_confirm": (
        Family("H1, the registered primary test (score)", (H1,), registered=True),
        Family(
            "S2, a registered secondary test (place furnace success rate %)",
            (S2,),
            registered=True,
        ),
    ),
    "campaign_llm15": (
        Family("H1, the registered primary test (score)", (H1_LLM15,), registered=True),
    ),
    "campaign_sfl": (
        Family("H1, the registered primary test (score)", (H1_SFL,), registered=True),
    ),
    "campaign_headline": (
        Family("H1, the registered primary test (score)", (H1_HEADLINE,), registered=True),
    ),
}
# {registered campaign: the campaign whose runs of the same configs it is pooled with
# (secondary, S1 of its registration)}.
POOLED_WITH: dict[str, str] = {"campaign_confirm": "campaign_cpu"}


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
    """The paper's a - b for `claim.context` (context only)."""
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
    pa, pb, effect = paper.effect(Claim(claim.name, *claim.context, claim.metric))
    assert effect.diff is not None
    nan = math.nan
    result = CampaignResult(
        claim, a, b, (planned.get(claim.a, 0), planned.get(claim.b, 0)), level, nan,
        (nan, nan), nan, effect.diff, nan, nan, NOT_ENOUGH, "",
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
    power = (
        simulated_welch_power(
            effect.diff,
            assumed_population(pa, a).std,
            assumed_population(pb, b).std,
            a.n,
            level,
            POWER_SIMS,
            n_b=b.n,
        )
        if pa is not None and pb is not None
        else nan  # Figure 4's rates come without a spread: no population to assume
    )
    # The paper's relative gain on our baseline: for the score, not for per-achievement
    # rates, whose ratios near 0% mean nothing (Figure 4's iron tools: 0.07% -> 0.67%).
    scaled = b.mean * effect.diff / pb.mean if pb is not None and pb.mean else nan
    bound = f"one-sided {100 * (1 - level):.3g}% bounds [{low:+.3g}, {high:+.3g}]"
    if low > 0:
        word, reason = claim.better, f"a - b >= {low:+.3g} ({bound})"
    elif high < 0:
        word, reason = WORSE, f"a - b <= {high:+.3g} ({bound})"
    elif a.std == b.std == 0:  # e.g. an achievement no run of either arm unlocked
        word = f"{NO_DIFFERENCE} (every run of both arms at {a.mean:.2f}: nothing varies)"
        reason = f"{bound} hold 0"
    else:
        word = f"{NO_DIFFERENCE}; {rules_out(high, effect.diff, scaled)}"
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
    paper's difference and its scaled gain where they lie above it (and only there)."""
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
        return (
            f"better: {what} scored {diff:+.2f} points above {against}{on} (one-sided "
            f"{conf} lower bound {low:+.2f}, p = {r.p_adj:.3g}; {runs}). {coda}"
        )
    if high < 0:
        return (
            f"worse: {what} scored {abs(diff):.2f} points below {against}{on} (one-sided "
            f"{conf} upper bound {high:+.2f}; {runs_otherwise})."
        )
    refs = "".join(
        f"; it {'rules out' if high < x else 'does not rule out'} {x:+.2f} ({label})"
        for label, x in references
    )
    return (
        f"no difference detected{on}: {diff:+.2f} points (one-sided {conf} bounds "
        f"[{low:+.2f}, {high:+.2f}], p = {r.p_adj:.3g}; {runs_otherwise}). The data rule out "
        f"an effect of {high:+.2f} or more{refs}."
    )


def _stats(runs: Mapping[str, ArrayLike], label: str) -> SampleStats | None:
    values = runs.get(label)
    if values is None or len(values) == 0:  # type: ignore[arg-type]
        return None
    return SampleStats.of(values, f"runs[{label!r}]")
