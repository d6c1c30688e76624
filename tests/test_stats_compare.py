"""Welch's test, Hedges' g, power and Bonferroni against hand-computed and textbook values."""

import math

import numpy as np
import pytest
import scipy.stats
from statsmodels.stats.power import TTestIndPower

from envgen.errors import StatsInputError
from envgen.stats.compare import (
    bonferroni,
    hedges_g_from_stats,
    welch_from_stats,
    welch_power,
    welch_test,
)
from envgen.stats.runs import SampleStats

pytestmark = pytest.mark.filterwarnings("error")

# Wikipedia, "Welch's t-test", example 1: t = -2.46, df = 25.0, p = 0.021.
WIKI_A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
WIKI_B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]


def test_welch_textbook_example():
    r = welch_test(WIKI_A, WIKI_B)
    assert r.t == pytest.approx(-2.46, abs=0.005)
    assert r.df == pytest.approx(25.0, abs=0.05)
    assert r.p == pytest.approx(0.021, abs=0.0005)


def test_welch_hand_computed():
    # means 2 and 5, variances 1 and 1: se = sqrt(2/3), t = -3/se, df = 4.
    r = welch_test([1, 2, 3], [4, 5, 6])
    assert r.t == pytest.approx(-3 / math.sqrt(2 / 3))
    assert r.df == pytest.approx(4.0)
    assert r.p == pytest.approx(2 * scipy.stats.t.sf(3 / math.sqrt(2 / 3), 4))


@pytest.mark.parametrize(
    "a, b",
    [
        (WIKI_A, WIKI_B),
        ([1, 1, 2, 2], [1, 2, 2, 2]),  # ties within and across rows
        ([0.1, 0.4, 0.4, 0.9, 0.2], [0.3, 0.3, 0.8]),  # unequal n
    ],
)
def test_welch_matches_scipy_on_arrays(a, b):
    ours = welch_test(a, b)
    ref = scipy.stats.ttest_ind(a, b, equal_var=False)
    assert ours.t == pytest.approx(ref.statistic)
    assert ours.p == pytest.approx(ref.pvalue)
    assert ours.df == pytest.approx(ref.df)


def test_welch_one_zero_variance_row_by_hand():
    # diff 1, var_b 1 over 3 runs: t = sqrt(3); df falls to n_b - 1 = 2.
    r = welch_test([3, 3, 3], [1, 2, 3])
    assert r.t == pytest.approx(math.sqrt(3))
    assert r.df == pytest.approx(2.0)


def test_welch_both_zero_variance_is_defined():
    same = welch_test([0.1, 0.1, 0.1], [0.1, 0.1])
    assert (same.t, same.p) == (0.0, 1.0)
    apart = welch_test([3.0, 3.0, 3.0], [2.0, 2.0, 2.0])
    assert apart.t == math.inf and apart.p == 0.0
    assert welch_test([2.0, 2.0], [3.0, 3.0]).t == -math.inf


def test_single_run_is_untestable_not_an_error():
    r = welch_test([5.0], [1.0, 2.0, 3.0])
    assert math.isnan(r.p) and math.isnan(r.t) and math.isnan(r.df)


def test_nan_runs_are_dropped():
    assert welch_test([1, np.nan, 2, 3], [4, 5, 6, np.nan]) == welch_test([1, 2, 3], [4, 5, 6])


def test_bad_runs_name_the_row():
    with pytest.raises(StatsInputError, match="baseline.*infinite"):
        welch_test([1, 2], [1, np.inf], names=("envgen", "baseline"))
    with pytest.raises(StatsInputError, match="envgen.*no finite run"):
        welch_test([np.nan, np.nan], [1, 2], names=("envgen", "baseline"))
    with pytest.raises(StatsInputError, match=r"envgen.*shape \(n_runs,\)"):
        welch_test([[1, 2], [3, 4]], [1, 2], names=("envgen", "baseline"))


def hedges_g(a, b):
    return hedges_g_from_stats(SampleStats.of(a, "a"), SampleStats.of(b, "b"))


def test_hedges_g_hand_computed():
    # pooled sd 1, d = -3, J(4) = Gamma(2) / (sqrt(2) Gamma(1.5)) = 0.797885.
    assert hedges_g([1, 2, 3], [4, 5, 6]) == pytest.approx(-3 * 0.7978845608)


def test_hedges_g_approximation_for_large_samples():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 1, 40), rng.normal(0, 2, 50)
    pooled = math.sqrt((39 * a.var(ddof=1) + 49 * b.var(ddof=1)) / 88)
    d = (a.mean() - b.mean()) / pooled
    assert hedges_g(a, b) == pytest.approx(d * (1 - 3 / (4 * 88 - 1)), rel=1e-4)


def test_hedges_g_edge_cases():
    assert hedges_g([2, 2, 2], [2, 2]) == 0.0
    assert hedges_g([3, 3, 3], [2, 2]) == math.inf
    # single run adds its mean, not spread: pooled sd 1 from b, J(2) = 1 / sqrt(pi).
    assert hedges_g([5.0], [1, 2, 3]) == pytest.approx(3 / math.sqrt(math.pi))
    assert math.isnan(hedges_g([5.0], [1.0, 2.0]))  # one pooled degree of freedom


def test_power_textbook_and_statsmodels():
    # Cohen (1988): d = 0.5 with 64 runs per row gives power 0.80 at alpha 0.05.
    one, zero = SampleStats(0.5, 1.0, 2), SampleStats(0.0, 1.0, 2)
    assert welch_power(one, zero, 64, 64, 0.05) == pytest.approx(0.80, abs=0.005)
    for d, n, alpha in [(0.3, 30, 0.05), (1.0, 10, 0.01), (2.0, 3, 0.05)]:
        ref = TTestIndPower().power(effect_size=d, nobs1=n, ratio=1.0, alpha=alpha)
        ours = welch_power(SampleStats(d, 1.0, 2), zero, n, n, alpha)
        assert ours == pytest.approx(ref, rel=1e-9)


def test_power_edge_cases_and_huge_effects():
    a, b = SampleStats(35.3, 0.7, 30), SampleStats(31.8, 0.7, 10)
    assert welch_power(a, b, 1, 30, 0.05) == 0.0
    assert welch_power(a, SampleStats(35.3, 0.7, 10), 30, 30, 0.05) == 0.05
    assert welch_power(SampleStats(1, 0, 3), SampleStats(0, 0, 3), 3, 3, 0.05) == 1.0
    assert welch_power(a, b, 30, 30, 0.001) == pytest.approx(1.0)  # no NaN from scipy's tails
    with pytest.raises(StatsInputError, match="alpha"):
        welch_power(a, b, 30, 30, 1.5)


def test_bonferroni_hand_computed_with_untestable_entry():
    # four testable p-values: each times 4, capped at 1.
    adjusted = bonferroni([0.01, 0.04, math.nan, 0.3, 0.005])
    expected = [0.04, 0.16, math.nan, 1.0, 0.02]
    np.testing.assert_allclose(adjusted, expected)
    assert np.isnan(bonferroni([math.nan])).all()
    with pytest.raises(StatsInputError, match="pvalues"):
        bonferroni([0.5, 1.2])


def test_ours_against_the_paper_matches_scipy_from_stats():
    paper = SampleStats(32.2, 0.6, 30)
    r = welch_from_stats(SampleStats.of([31.0, 32.0, 33.5], "runs"), paper)
    ref = scipy.stats.ttest_ind_from_stats(
        np.mean([31.0, 32.0, 33.5]),
        np.std([31.0, 32.0, 33.5], ddof=1),
        3,
        32.2,
        0.6,
        30,
        equal_var=False,
    )
    assert r.p == pytest.approx(ref.pvalue)
    assert math.isnan(welch_from_stats(SampleStats.of([30.0], "runs"), paper).p)
