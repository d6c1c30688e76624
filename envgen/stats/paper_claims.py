"""The paper's claims as row pairs, and one verdict per claim from our runs.

A claim is "row a beats row b" on one metric, oriented so that the paper finds
a - b > 0: a table's score (Tables 1-8, Figure 9), one achievement's success rate
(Figure 4) or one achievement's first-unlock step (Figure 5, where b = EnvGen unlocks
earlier). `evaluate_claims` runs Welch's test on our runs for every claim of a family,
Bonferroni-corrects across it and applies `envgen.stats.verdict.verdict` with the
family's per-claim level; docs/stats.md gives the rule and its reasons.
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
    bonferroni,
    hedges_g_from_stats,
    welch_from_stats,
    welch_power,
)
from envgen.stats.intervals import Interval, welch_interval
from envgen.stats.paper import (
    load_reported,
    load_reported_first_unlock,
    load_reported_per_achievement,
    reported,
)
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA, INCONCLUSIVE, PaperEffect, tie_margin, tost_p, verdict

TABLE_METRICS = ("score", "reward")
SUCCESS, FIRST_UNLOCK = "success_rate", "first_unlock"  # per-achievement metric prefixes


@dataclasses.dataclass(frozen=True)
class Claim:
    """One comparison the paper makes between two of its rows, oriented so a - b > 0."""

    name: str
    """Short statement of the claim, e.g. "EnvGen > Crafter-only at 1.96M steps"."""
    a: str
    """Row label (reported_results.csv `row`) of the arm the paper puts higher."""
    b: str
    """Row label of the arm it is compared with."""
    metric: str = "score"
    """"score" (Crafter score / Heist success %), "reward", "success_rate:<achievement>"
    (% of final-phase episodes) or "first_unlock:<achievement>" (final-phase step)."""

    @property
    def achievement(self) -> str | None:
        """The achievement of a per-achievement metric; None for a table metric."""
        return self.metric.split(":", 1)[1] if ":" in self.metric else None


# One label per experiment: the paper repeats some rows under several labels with the
# same numbers (checked by the tests) and this package trains each once (one config
# hash); claims use the canonical label on the right. Table 5's "GPT-4-Turbo (fixed)"
# has Table 2's Fixed numbers in the paper but is not here: our Table 2 Fixed rows use
# the bundled model, so the two are different configurations (one arm, one config).
SAME_EXPERIMENT: dict[str, str] = {
    "Adaptive+Dynamic (EnvGen)": "PPO + EnvGen",
    "update every 0.12M (4 cycles)": "PPO + EnvGen",
    "0.48M EnvGen + 1.48M Crafter": "PPO + EnvGen",
    "4 envs per call": "PPO + EnvGen",
    "ratio 1:1": "PPO + EnvGen",
    "PPO + 0.96M Crafter pretraining": "1.96M Crafter only",
}
ENVGEN = "PPO + EnvGen"
CRAFTER_ONLY = "1.96M Crafter only"
FIXED = "Fixed (no curriculum)"
GPT4_FIXED = "GPT-4-Turbo (fixed)"
DEEPSEEK_FIXED = "Deepseek Coder 33B Instruct (fixed)"
GPT35_FIXED = "GPT-3.5-Turbo (fixed)"
# The per-achievement CSVs' column of each arm (data/paper/README.md).
PAPER_COLUMNS = {ENVGEN: "ppo_envgen", CRAFTER_ONLY: "ppo_1.96M_crafter"}


def _default_vs(default: str, others: tuple[str, ...], what: str) -> tuple[Claim, ...]:
    return tuple(Claim(f"{what}: {default} > {other}", default, other) for other in others)


# The comparisons the paper draws between tables' rows (docs/paper.md, "Results"), once each.
PAPER_CLAIMS: tuple[Claim, ...] = (
    Claim("Tables 1, 4: EnvGen > Crafter-only at 1.96M steps", ENVGEN, CRAFTER_ONLY),
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
    *_default_vs(ENVGEN, (FIXED, "Easy-to-Hard", "Adversarial"), "Table 2"),
    Claim("Tables 1, 2: Fixed > Crafter-only at 1.96M steps", FIXED, CRAFTER_ONLY),
    *_default_vs(
        ENVGEN, ("update every 0.012M (40 cycles)", "update every 0.06M (8 cycles)"), "Table 3"
    ),
    *_default_vs(GPT4_FIXED, (DEEPSEEK_FIXED, GPT35_FIXED), "Table 5"),
    Claim(f"Table 5: {DEEPSEEK_FIXED} > {GPT35_FIXED}", DEEPSEEK_FIXED, GPT35_FIXED),
    *_default_vs(ENVGEN, ("1 env per call", "2 envs per call", "8 envs per call"), "Table 6"),
    *_default_vs(ENVGEN, ("ratio 5:1", "ratio 2:1"), "Table 7"),
    Claim("Figure 9: named parameters > obfuscated", ENVGEN, "obfuscated parameter names"),
    Claim("Table 8: Heist EnvGen > PPO", "Heist PPO + EnvGen", "Heist PPO"),
)

# Figure 4: the gains the paper's text names (data/paper/README.md, "Checked against the
# paper's text"); the numbers come from reported_per_achievement.csv.
FIGURE4_ACHIEVEMENTS = (
    "collect_iron",
    "make_stone_pickaxe",
    "make_stone_sword",
    "make_iron_pickaxe",
    "make_iron_sword",
)
FIGURE4_CLAIMS: tuple[Claim, ...] = tuple(
    Claim(f"Figure 4: EnvGen > Crafter-only, {a} success", ENVGEN, CRAFTER_ONLY, f"{SUCCESS}:{a}")
    for a in FIGURE4_ACHIEVEMENTS
)
# Figure 5: the earlier unlocks, the lines of data/paper/reported_first_unlock.csv (a
# test checks they agree).
FIGURE5_ACHIEVEMENTS = ("make_stone_pickaxe", "make_iron_pickaxe", "make_iron_sword")
FIGURE5_CLAIMS: tuple[Claim, ...] = tuple(
    Claim(
        f"Figure 5: EnvGen unlocks {a} earlier than Crafter-only",
        CRAFTER_ONLY,
        ENVGEN,
        f"{FIRST_UNLOCK}:{a}",
    )
    for a in FIGURE5_ACHIEVEMENTS
)
# Each family is Bonferroni-corrected on its own: the tables' claims, Figure 4, Figure 5.
FAMILIES: dict[str, tuple[Claim, ...]] = {
    "Tables": PAPER_CLAIMS,
    "Figure 4": FIGURE4_CLAIMS,
    "Figure 5": FIGURE5_CLAIMS,
}


@dataclasses.dataclass(frozen=True)
class PaperNumbers:
    """Every reported number a claim may be measured against (data/paper)."""

    results: pd.DataFrame
    """`load_reported()`."""
    per_achievement: pd.DataFrame
    """`load_reported_per_achievement()` (Figure 4)."""
    first_unlock: pd.DataFrame
    """`load_reported_first_unlock()` (Figure 5)."""

    @classmethod
    def load(cls) -> PaperNumbers:
        return cls(load_reported(), load_reported_per_achievement(), load_reported_first_unlock())

    def effect(self, claim: Claim) -> tuple[SampleStats | None, SampleStats | None, PaperEffect]:
        """The paper's rows a and b (None without a reported std) and its a - b."""
        if claim.metric in TABLE_METRICS:
            a = reported(self.results, claim.a, claim.metric)
            b = reported(self.results, claim.b, claim.metric)
            return a, b, PaperEffect(a.mean - b.mean, tie_margin(a, b))
        kind, achievement = claim.metric.split(":", 1)
        frame = {SUCCESS: self.per_achievement, FIRST_UNLOCK: self.first_unlock}.get(kind)
        if frame is None or achievement not in frame.index:
            raise StatsInputError(claim.name, f"the paper reports no {claim.metric!r}")
        try:
            values = [frame.loc[achievement, PAPER_COLUMNS[row]] for row in (claim.a, claim.b)]
        except KeyError:
            raise StatsInputError(
                claim.name, f"{claim.metric} is reported for {', '.join(PAPER_COLUMNS)} only"
            ) from None
        known = not any(pd.isna(v) for v in values)
        return None, None, PaperEffect(float(values[0] - values[1]) if known else None)


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """Our evidence on one claim, and its verdict."""

    claim: Claim
    """The claim tested."""
    ours_a: SampleStats
    """Our runs of row a."""
    ours_b: SampleStats
    """Our runs of row b."""
    paper_a: SampleStats | None
    """The paper's row a (mean, std, its number of runs); None where no std is reported."""
    paper_b: SampleStats | None
    """The paper's row b."""
    paper: PaperEffect
    """The paper's a - b and, for a tie, the equivalence margin."""
    welch: WelchResult
    """Welch's test of our a - b."""
    p_adj: float
    """Bonferroni-adjusted p across the family; NaN if untestable."""
    level: float
    """Per-claim level alpha / m (m testable claims in the family)."""
    ci: Interval
    """Our Welch interval of a - b at confidence 1 - level: it excludes 0 iff p_adj < alpha."""
    tost_p: float
    """TOST p for the paper's tie margin; NaN unless the paper's difference is a tie."""
    g: float
    """Our Hedges' g of a - b."""
    paper_g: float
    """The paper's Hedges' g of a - b; NaN without reported stds."""
    power: float
    """Power our test had, at `level`, for the paper's difference; NaN without reported stds."""
    verdict: str
    """One of `envgen.stats.verdict`'s words."""
    reason: str
    """Why, in one sentence, with the numbers that decided it."""


def evaluate_claims(
    claims: Sequence[Claim],
    runs: Mapping[str, Mapping[str, ArrayLike]],
    *,
    paper: PaperNumbers,
    profile: str,
    configs: Mapping[str, str | None] | None = None,
    designers: Mapping[str, str | None] | None = None,
    alpha: float = ALPHA,
) -> list[ClaimResult]:
    """Verdicts for one family of `claims`, Bonferroni-corrected together. `runs`: {metric:
    {row label: per-run values, shape (n_runs,)}}; NaN runs are dropped. `configs`: {row
    label: config hash}; a claim whose two rows are one config compares a run set with
    itself and is left out of the family, inconclusive. `designers`: {row label:
    "llm:<model>" | baseline | None}; a claim whose rows were designed by another than the
    paper's LLM (`paper_designer`) is inconclusive, with that reason, whatever the profile.
    Every claim's rows must be in `runs` (select claims first)."""
    ours = [(_ours(runs, c.a, c), _ours(runs, c.b, c)) for c in claims]
    same = [_one_config(configs, c) for c in claims]
    tests = [welch_from_stats(a, b) for a, b in ours]
    adjusted = bonferroni([math.nan if s else t.p for t, s in zip(tests, same, strict=True)])
    level = alpha / max(1, int((~pd.isna(adjusted)).sum()))
    results = []
    for claim, (a, b), test, p_adj, config in zip(claims, ours, tests, adjusted, same, strict=True):
        pa, pb, effect = paper.effect(claim)
        foreign = _foreign_designer(designers, claim)
        if config:
            word, reason = INCONCLUSIVE, f"a and b are one configuration ({config}): no comparison"
        elif foreign:
            word, reason = INCONCLUSIVE, foreign
        else:
            word, reason = verdict(profile=profile, ours=(a, b), paper=effect, level=level)
        known = pa is not None and pb is not None
        if known:
            pop_a, pop_b = assumed_population(pa, a), assumed_population(pb, b)
        results.append(
            ClaimResult(
                claim=claim,
                ours_a=a,
                ours_b=b,
                paper_a=pa,
                paper_b=pb,
                paper=effect,
                welch=test,
                p_adj=float(p_adj),
                level=level,
                ci=welch_interval(a, b, 1 - level),
                tost_p=math.nan if effect.tie_margin is None else tost_p(a, b, effect.tie_margin),
                g=hedges_g_from_stats(a, b),
                paper_g=hedges_g_from_stats(pa, pb) if known else math.nan,
                power=welch_power(pop_a, pop_b, a.n, b.n, level) if known else math.nan,
                verdict=word,
                reason=reason,
            )
        )
    return results


# The LLM behind each row of the paper: Table 5's rows name theirs, every other LLM row
# is GPT-4-Turbo (docs/paper.md, "Agent and training protocol").
PAPER_LLM = "gpt-4-1106-preview"
PAPER_LLM_NAME = "GPT-4-Turbo"
TABLE5_LLMS = {
    GPT4_FIXED: PAPER_LLM,
    GPT35_FIXED: "gpt-3.5-turbo",
    DEEPSEEK_FIXED: "deepseek-coder-33b-instruct",
}


def paper_designer(label: str) -> str:
    """The designer the paper's row `label` used, as `RowRecord.designer` writes it."""
    return f"llm:{TABLE5_LLMS.get(label, PAPER_LLM)}"


def _foreign_designer(designers: Mapping[str, str | None] | None, claim: Claim) -> str | None:
    """Why the claim's rows do not rest on the paper's designer, or None when they do."""
    if designers is None:
        return None
    for label in (claim.a, claim.b):
        designer = designers.get(label)
        if designer is not None and designer != paper_designer(label):
            expected = TABLE5_LLMS.get(label, PAPER_LLM)
            name = PAPER_LLM_NAME if expected == PAPER_LLM else expected
            return f"designer of {label!r} is {designer}, not the paper's {name}"
    return None


def _one_config(configs: Mapping[str, str | None] | None, claim: Claim) -> str | None:
    """The shared config hash when a claim's two rows are one configuration, else None."""
    if configs is None:
        return None
    a, b = configs.get(claim.a), configs.get(claim.b)
    return a if a is not None and a == b else None


def assumed_population(paper: SampleStats, ours: SampleStats) -> SampleStats:
    """The population a power calculation assumes: the paper's mean, the larger spread.
    Taking our std when it exceeds the paper's keeps noisier runs from being credited with
    power they did not have (docs/stats.md, "Per claim", **Power**)."""
    std = paper.std if ours.n < 2 else max(paper.std, ours.std)
    return dataclasses.replace(paper, std=std)


def _ours(runs: Mapping[str, Mapping[str, ArrayLike]], row: str, claim: Claim) -> SampleStats:
    by_row = runs.get(claim.metric, {})
    if row not in by_row:
        raise StatsInputError(
            f"runs[{row!r}]",
            f"claim {claim.name!r} needs this row; pass its runs or leave the claim out "
            f"(rows given for {claim.metric}: {', '.join(sorted(by_row)) or 'none'})",
        )
    return SampleStats.of(by_row[row], f"runs[{row!r}]")
