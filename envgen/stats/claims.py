"""The paper's claims as row pairs, and one verdict per claim from our runs.

A claim is "row a beats row b" (or, for an ablation, "the default a beats the
alternative b") on one metric, as the paper's tables report it. `evaluate_claims`
runs Welch's test on our runs for every claim, Holm-corrects across them, computes
the power each test had for the paper's effect, and applies `verdict`, whose rule
and reasons are in docs/stats.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import pandas as pd
from numpy.typing import ArrayLike

from envgen.errors import StatsInputError
from envgen.stats.compare import (
    WelchResult,
    hedges_g_from_stats,
    holm,
    welch_from_stats,
    welch_power,
)
from envgen.stats.paper import reported
from envgen.stats.runs import SampleStats

# Profiles whose runs may reproduce or contradict a claim: the paper's budgets (1.96M
# Crafter steps, 30 runs). Any other profile (e.g. "smoke") is inconclusive by rule.
CLAIM_GRADE_PROFILES: frozenset[str] = frozenset({"paper"})

ALPHA = 0.05  # family-wise error rate across the claims evaluated together
MIN_POWER = 0.8  # power at which a non-significant result counts against the claim

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One comparison the paper makes between two of its reported rows."""

    name: str
    """Short statement of the claim, e.g. "EnvGen > Crafter-only at 1.96M steps"."""
    a: str
    """Row label (reported_results.csv `row`) of the arm the paper finds better or its default."""
    b: str
    """Row label of the arm it is compared with."""
    metric: str = "score"
    """"score" (Crafter score / Heist success %) or "reward"."""


# One label per experiment: the paper repeats some rows under several labels with the
# same numbers (checked by the tests); claims use the canonical label on the right.
SAME_EXPERIMENT: dict[str, str] = {
    "Adaptive+Dynamic (EnvGen)": "PPO + EnvGen",
    "update every 0.12M (4 cycles)": "PPO + EnvGen",
    "0.48M EnvGen + 1.48M Crafter": "PPO + EnvGen",
    "4 envs per call": "PPO + EnvGen",
    "ratio 1:1": "PPO + EnvGen",
    "PPO + 0.96M Crafter pretraining": "1.96M Crafter only",
    "GPT-4-Turbo (fixed)": "Fixed (no curriculum)",
}
ENVGEN = "PPO + EnvGen"


def _default_vs(default: str, others: tuple[str, ...], what: str) -> tuple[Claim, ...]:
    return tuple(Claim(f"{what}: {default} > {other}", default, other) for other in others)


# The comparisons ENVGEN_PAPER.md's "Results" draw, each pair of experiments once.
PAPER_CLAIMS: tuple[Claim, ...] = (
    Claim("Tables 1, 4: EnvGen > Crafter-only at 1.96M steps", ENVGEN, "1.96M Crafter only"),
    Claim(
        "Table 4: EnvGen > Crafter-only at 1.24M steps",
        "0.12M EnvGen + 1.12M Crafter",
        "1.24M Crafter only",
    ),
    Claim(
        "Table 4: EnvGen > Crafter-only at 1.48M steps",
        "0.24M EnvGen + 1.24M Crafter",
        "1.48M Crafter only",
    ),
    Claim(
        "Table 1: AD + EnvGen > AD Crafter-only at 1.96M steps",
        "AD + EnvGen",
        "AD + 0.96M Crafter pretraining",
    ),
    *_default_vs(ENVGEN, ("Fixed (no curriculum)", "Easy-to-Hard", "Adversarial"), "Table 2"),
    *_default_vs(
        ENVGEN, ("update every 0.012M (40 cycles)", "update every 0.06M (8 cycles)"), "Table 3"
    ),
    *_default_vs(
        "Fixed (no curriculum)",
        ("Deepseek Coder 33B Instruct (fixed)", "GPT-3.5-Turbo (fixed)"),
        "Table 5, GPT-4-Turbo",
    ),
    *_default_vs(ENVGEN, ("1 env per call", "2 envs per call", "8 envs per call"), "Table 6"),
    *_default_vs(ENVGEN, ("ratio 5:1", "ratio 2:1"), "Table 7"),
    Claim("Figure 9: named parameters > obfuscated", ENVGEN, "obfuscated parameter names"),
    Claim("Table 8: Heist EnvGen > PPO", "Heist PPO + EnvGen", "Heist PPO"),
)


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """Our evidence on one claim, and its verdict."""

    claim: Claim
    """The claim tested."""
    ours_a: SampleStats
    """Our runs of row a."""
    ours_b: SampleStats
    """Our runs of row b."""
    paper_a: SampleStats
    """The paper's row a (mean, std, its number of runs)."""
    paper_b: SampleStats
    """The paper's row b."""
    welch: WelchResult
    """Welch's test of our a - b."""
    p_holm: float
    """Holm-adjusted p across the claims evaluated together; NaN if untestable."""
    g: float
    """Our Hedges' g of a - b."""
    paper_g: float
    """The paper's Hedges' g of a - b, from its reported means, stds and runs."""
    power: float
    """Power our test had for the paper's difference (level alpha / tests; see `_assumed`)."""
    verdict: str
    """"reproduced", "contradicted" or "inconclusive"."""
    reason: str
    """Why, in one sentence, with the numbers that decided it."""


def verdict(
    *,
    profile: str,
    ours: tuple[SampleStats, SampleStats],
    paper_diff: float,
    welch: WelchResult,
    p_holm: float,
    power: float,
    alpha: float = ALPHA,
    min_power: float = MIN_POWER,
) -> tuple[str, str]:
    """The verdict rule (docs/stats.md, "Verdict"), first matching line wins.

    1. profile not claim-grade -> inconclusive; 2. a row with < 2 runs -> inconclusive;
    3. the paper reports no difference -> inconclusive; 4. Holm p < alpha -> reproduced
    if our difference has the paper's sign, else contradicted; 5. not significant with
    power >= min_power -> contradicted; 6. otherwise inconclusive.
    """
    if profile not in CLAIM_GRADE_PROFILES:
        grade = ", ".join(sorted(CLAIM_GRADE_PROFILES))
        return INCONCLUSIVE, f"profile {profile!r} is not claim-grade (claim-grade: {grade})"
    n_a, n_b = ours[0].n, ours[1].n
    if not welch.testable:
        return INCONCLUSIVE, f"untestable: {n_a} and {n_b} runs (Welch needs >= 2 per row)"
    if paper_diff == 0:
        return INCONCLUSIVE, "the paper reports equal means; there is no difference to reproduce"
    ours_diff = ours[0].mean - ours[1].mean
    if p_holm < alpha:
        same_sign = math.copysign(1, ours_diff) == math.copysign(1, paper_diff)
        where = "the paper's" if same_sign else "the opposite"
        return (
            REPRODUCED if same_sign else CONTRADICTED,
            f"difference {ours_diff:+.3g} in {where} direction, Holm p = {p_holm:.3g} < {alpha}",
        )
    if power >= min_power:
        return (
            CONTRADICTED,
            f"no significant difference (Holm p = {p_holm:.3g}) although the test had power "
            f"{power:.2f} >= {min_power} to detect the paper's {paper_diff:+.3g}",
        )
    return (
        INCONCLUSIVE,
        f"not significant (Holm p = {p_holm:.3g}) and power {power:.2f} < {min_power} "
        f"at {n_a} vs {n_b} runs",
    )


def evaluate_claims(
    claims: Sequence[Claim],
    runs: Mapping[str, ArrayLike],
    *,
    reported_frame: pd.DataFrame,
    profile: str,
    alpha: float = ALPHA,
    min_power: float = MIN_POWER,
) -> list[ClaimResult]:
    """Verdicts for `claims`, Holm-corrected as one family.

    `runs`: {row label: per-run values of the claim's metric, shape (n_runs,)}; NaN runs
    are dropped. `reported_frame`: `load_reported()`. Every claim's rows must be in
    `runs` (select claims first, e.g. those whose rows a profile ran).
    """
    ours = [(_ours(runs, c.a, c), _ours(runs, c.b, c)) for c in claims]
    papers = [
        (reported(reported_frame, c.a, c.metric), reported(reported_frame, c.b, c.metric))
        for c in claims
    ]
    tests = [welch_from_stats(a, b) for a, b in ours]
    adjusted = holm([t.p for t in tests])
    level = alpha / max(1, sum(t.testable for t in tests))
    results = []
    for claim, (a, b), (pa, pb), test, p_holm in zip(
        claims, ours, papers, tests, adjusted, strict=True
    ):
        power = welch_power(_assumed(pa, a), _assumed(pb, b), a.n, b.n, level)
        word, reason = verdict(
            profile=profile,
            ours=(a, b),
            paper_diff=pa.mean - pb.mean,
            welch=test,
            p_holm=float(p_holm),
            power=power,
            alpha=alpha,
            min_power=min_power,
        )
        results.append(
            ClaimResult(
                claim=claim,
                ours_a=a,
                ours_b=b,
                paper_a=pa,
                paper_b=pb,
                welch=test,
                p_holm=float(p_holm),
                g=hedges_g_from_stats(a, b),
                paper_g=hedges_g_from_stats(pa, pb),
                power=power,
                verdict=word,
                reason=reason,
            )
        )
    return results


def _assumed(paper: SampleStats, ours: SampleStats) -> SampleStats:
    """The population a power calculation assumes: the paper's mean, the larger spread.

    Taking our std when it exceeds the paper's keeps noisier runs from being credited
    with power they did not have (docs/stats.md, "Power").
    """
    std = paper.std if ours.n < 2 else max(paper.std, ours.std)
    return dataclasses.replace(paper, std=std)


def _ours(runs: Mapping[str, ArrayLike], row: str, claim: Claim) -> SampleStats:
    if row not in runs:
        raise StatsInputError(
            f"runs[{row!r}]",
            f"claim {claim.name!r} needs this row; pass its runs or leave the claim out "
            f"(rows given: {', '.join(sorted(runs)) or 'none'})",
        )
    return SampleStats.of(runs[row], f"runs[{row!r}]")
