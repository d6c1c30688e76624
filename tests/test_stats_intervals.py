"""Intervals: coverage checked by simulation; never bolder than the test on the same runs."""

import math

import numpy as np
import pytest
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from envgen.errors import StatsInputError
from envgen.stats.compare import welch_from_stats
from envgen.stats.intervals import mean_interval, simulated_coverage, welch_interval
from envgen.stats.runs import SampleStats
from envgen.stats.summary import stratified_bootstrap

pytestmark = pytest.mark.filterwarnings("error")

SIMS = 2000  # binomial sd of a 95% coverage estimate: 0.5 points


def _t(sample: np.ndarray) -> tuple[float, float]:
    return mean_interval(SampleStats.of(sample, "sample"))


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
def test_t_interval_covers_95_percent_at_every_n(n):
    assert simulated_coverage(_t, n, sims=SIMS, seed=n) == pytest.approx(0.95, abs=0.015)


def test_percentile_bootstrap_undercovers_at_two_runs():
    def boot(sample):
        ci = stratified_bootstrap(
            [sample[:, None]],
            lambda s: np.mean(s, axis=(-2, -1)),
            seed=0,
            reps=200,
            confidence=0.95,
            batch=1000,
        )
        return ci.low, ci.high

    assert simulated_coverage(boot, 2, sims=300, seed=1) < 0.65  # 51% measured at 2000 sims


def test_welch_interval_covers_95_percent_with_unequal_spreads():
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(SIMS):
        a = SampleStats.of(rng.normal(0.0, 1.0, 3), "a")
        b = SampleStats.of(rng.normal(0.0, 4.0, 6), "b")
        low, high = welch_interval(a, b)
        hits += low <= 0.0 <= high
    assert hits / SIMS == pytest.approx(0.95, abs=0.02)  # Welch is approximate


def test_welch_interval_matches_statsmodels_and_the_test():
    a, b = np.array([10.0, 12.0, 9.0, 13.0]), np.array([8.0, 8.5, 7.0, 9.5, 8.0])
    sa, sb = SampleStats.of(a, "a"), SampleStats.of(b, "b")
    expected = CompareMeans(DescrStatsW(a), DescrStatsW(b)).tconfint_diff(usevar="unequal")
    assert welch_interval(sa, sb) == pytest.approx(expected, rel=1e-12)
    p = welch_from_stats(sa, sb).p
    low, _ = welch_interval(sa, sb, 1 - p)  # at confidence 1 - p the interval touches 0
    assert low == pytest.approx(0.0, abs=1e-9)


def test_non_overlapping_row_intervals_imply_a_significant_difference():
    """A table's two row intervals never claim more than Welch's test on the same runs."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(5000):
        n_a, n_b = rng.integers(2, 31, size=2)
        a = SampleStats(rng.normal(0, 3), rng.uniform(0.05, 3), int(n_a))
        b = SampleStats(rng.normal(0, 3), rng.uniform(0.05, 3), int(n_b))
        (la, ha), (lb, hb) = mean_interval(a), mean_interval(b)
        if ha < lb or hb < la:
            checked += 1
            assert welch_from_stats(a, b).p < 0.05, (a, b)
    assert checked > 500


def test_edge_cases():
    one = SampleStats(mean=1.0, std=math.nan, n=1)
    assert all(math.isnan(x) for x in mean_interval(one))
    assert all(math.isnan(x) for x in welch_interval(one, SampleStats(2.0, 1.0, 3)))
    assert mean_interval(SampleStats(3.0, 0.0, 4)) == (3.0, 3.0)
    assert welch_interval(SampleStats(3.0, 0.0, 3), SampleStats(1.0, 0.0, 4)) == (2.0, 2.0)
    with pytest.raises(StatsInputError, match="confidence"):
        mean_interval(SampleStats(1.0, 1.0, 3), confidence=95)
