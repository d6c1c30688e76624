"""Two-row comparisons: Welch's t-test, Hedges' g, the test's power, Bonferroni's correction.

Each function has a defined output for what small replications meet: a single run,
zero variance (all runs tied) and equal means; none of them emits a warning.
Welch's test is scipy's (`ttest_ind_from_stats(equal_var=False)`), Bonferroni's correction
statsmodels' (`multipletests(method="bonferroni")`); docs/stats.md gives the reasons.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import scipy.special
import scipy.stats
from numpy.typing import ArrayLike
from statsmodels.stats.multitest import multipletests

from envgen.errors import StatsInputError
from envgen.stats.runs import SampleStats


@dataclasses.dataclass(frozen=True)
class WelchResult:
    """Welch's two-sided t-test of mean(a) - mean(b)."""

    t: float
    """t statistic; +/-inf when both rows have zero variance and different means."""
    df: float
    """Welch-Satterthwaite degrees of freedom; NaN when both variances are zero or untestable."""
    p: float
    """Two-sided p-value; NaN when a row has fewer than 2 runs (untestable)."""


def welch_df(a: SampleStats, b: SampleStats) -> float:
    """Welch-Satterthwaite degrees of freedom; NaN if a row has < 2 runs or both have no spread."""
    if a.n < 2 or b.n < 2:
        return math.nan
    va, vb = a.std**2 / a.n, b.std**2 / b.n
    if va + vb == 0:
        return math.nan
    return (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))


def welch_from_stats(a: SampleStats, b: SampleStats) -> WelchResult:
    """Welch's test from summary statistics (e.g. ours against the paper's mean +/- std).
    Fewer than 2 runs in a row: untestable (t, df, p all NaN). Both rows with zero variance:
    equal means give t=0, p=1; different means give t=+/-inf, p=0 (the limit of the test as
    both variances shrink, and scipy's own value)."""
    if a.n < 2 or b.n < 2:
        return WelchResult(t=math.nan, df=math.nan, p=math.nan)
    diff = a.mean - b.mean
    if a.std == 0 and b.std == 0:
        if diff == 0:
            return WelchResult(t=0.0, df=math.nan, p=1.0)
        return WelchResult(t=math.copysign(math.inf, diff), df=math.nan, p=0.0)
    result = scipy.stats.ttest_ind_from_stats(
        a.mean, a.std, a.n, b.mean, b.std, b.n, equal_var=False
    )
    return WelchResult(t=float(result.statistic), df=welch_df(a, b), p=float(result.pvalue))


def welch_test(a: ArrayLike, b: ArrayLike, names: tuple[str, str] = ("a", "b")) -> WelchResult:
    """Welch's test on two rows' per-run values, shapes (n_a,) and (n_b,); NaN runs dropped."""
    return welch_from_stats(SampleStats.of(a, names[0]), SampleStats.of(b, names[1]))


def _hedges_correction(df: int) -> float:
    """Exact small-sample bias correction J(df) = G(df/2) / (sqrt(df/2) G((df-1)/2))."""
    return math.exp(
        scipy.special.gammaln(df / 2) - scipy.special.gammaln((df - 1) / 2) - 0.5 * math.log(df / 2)
    )


def hedges_g_from_stats(a: SampleStats, b: SampleStats) -> float:
    """Hedges' g of mean(a) - mean(b): Cohen's d over the pooled std, bias-corrected. Pooled
    variance weights each row by n - 1, so a single-run row adds its mean but no spread. NaN
    when fewer than 2 pooled degrees of freedom (n_a + n_b < 4); with zero pooled variance,
    0.0 for equal means and +/-inf otherwise."""
    df = a.n + b.n - 2
    if df < 2:
        return math.nan
    sum_sq = sum((s.n - 1) * s.std**2 for s in (a, b) if s.n > 1)
    pooled = math.sqrt(sum_sq / df)
    diff = a.mean - b.mean
    if pooled == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / pooled * _hedges_correction(df)


def welch_power(
    true_a: SampleStats, true_b: SampleStats, n_a: int, n_b: int, alpha: float
) -> float:
    """Power of a two-sided Welch test at level `alpha` with n_a and n_b runs. The
    populations are taken to have `true_a`'s and `true_b`'s means and stds (for us: the
    paper's reported rows); their own `n` is ignored. Noncentral t with the
    Welch-Satterthwaite df of the assumed stds. Defined edge cases: fewer than 2 runs in a
    row gives 0.0 (the test cannot run); zero assumed spread gives 1.0 for different means;
    equal means give `alpha` (the false-positive rate)."""
    if not 0 < alpha < 1:
        raise StatsInputError("alpha", f"must be in (0, 1); got {alpha}")
    if n_a < 2 or n_b < 2:
        return 0.0
    delta = true_a.mean - true_b.mean
    if delta == 0:
        return alpha
    va, vb = true_a.std**2 / n_a, true_b.std**2 / n_b
    if va + vb == 0:
        return 1.0
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    ncp = abs(delta) / math.sqrt(va + vb)
    crit = scipy.stats.t.ppf(1 - alpha / 2, df)
    # The wrong-sign tail as sf at -ncp: scipy's nct.cdf returns NaN far in that tail.
    return float(scipy.stats.nct.sf(crit, df, ncp) + scipy.stats.nct.sf(crit, df, -ncp))


def bonferroni(pvalues: Sequence[float]) -> np.ndarray:
    """Bonferroni-adjusted p-values (min(1, m p)), same order; NaN (untestable) stays NaN.
    The family is the testable entries only: an untestable claim is no test made.
    Bonferroni, not Holm: its per-claim level alpha / m has a matching interval, so the
    interval printed beside a claim and its adjusted p always agree (docs/stats.md)."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise StatsInputError("pvalues", f"expected shape (n_tests,); got {p.shape}")
    testable = ~np.isnan(p)
    if ((p[testable] < 0) | (p[testable] > 1)).any():
        raise StatsInputError("pvalues", "p-values must lie in [0, 1]")
    adjusted = np.full(p.shape, math.nan)
    if testable.any():
        adjusted[testable] = multipletests(p[testable], method="bonferroni")[1]
    return adjusted
