"""rliable's views (envgen.stats.rliable_views): hand-checked values, rliable's own point
estimates as the reference, and a bootstrap that repeats under its seed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rliable import metrics

from envgen.errors import StatsInputError
from envgen.stats.rliable_views import (
    compare,
    improvement_probability,
    iqm_difference,
    iqm_interval,
    performance_profile,
    score_distribution,
)
from envgen.stats.summary import Interval


def test_iqm_of_known_data_and_against_rliable():
    # 8 runs: the IQM drops the 2 lowest and 2 highest, mean of 3, 4, 5, 6.
    assert iqm_interval(np.arange(1.0, 9.0), name="r", reps=200).point == 4.5
    scores = np.random.default_rng(0).gamma(2.0, 10.0, size=(12, 5))
    assert iqm_interval(scores, name="r", reps=200).point == pytest.approx(
        metrics.aggregate_iqm(scores)
    )


def test_the_bootstrap_repeats_under_its_seed_and_moves_with_it():
    rng = np.random.default_rng(1)
    a, b = rng.normal(20, 2, (16, 22)), rng.normal(21, 2, (16, 22))
    first = compare(improvement_probability, a, b, seed=3, reps=500)
    assert compare(improvement_probability, a, b, seed=3, reps=500) == first
    assert compare(improvement_probability, a, b, seed=4, reps=500) != first
    assert iqm_interval(a, name="a", seed=3, reps=500) == iqm_interval(
        a, name="a", seed=3, reps=500
    )


def test_the_bootstrap_is_stratified_by_task():
    # Two tasks, each the same in every run: a resample that keeps each run's task (rliable's
    # stratified bootstrap) always has half 0s and half 100s, IQM 50; one that resampled the
    # cells of all tasks together would not.
    scores = np.column_stack([np.zeros(6), np.full(6, 100.0)])
    assert _triple(iqm_interval(scores, name="two tasks", reps=1000)) == (50.0, 50.0, 50.0)


def test_improvement_probability_of_known_samples_and_against_rliable():
    low, high = np.array([1.0, 2.0, 3.0]), np.array([5.0, 6.0, 7.0])
    assert _triple(compare(improvement_probability, high, low, reps=200)) == (1.0, 1.0, 1.0)
    assert _triple(compare(improvement_probability, low, high, reps=200)) == (0.0, 0.0, 0.0)
    assert compare(improvement_probability, low, low, reps=200).point == 0.5
    # Ties count half: 2 > 1 (1), 2 = 2 (0.5), 2 < 3 (0): 1.5 / 3 = 0.5
    assert improvement_probability(np.array([[2.0]]), low[:, None]) == 0.5
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 5, (9, 4)).astype(float), rng.integers(0, 5, (7, 4)).astype(float)
    assert improvement_probability(x, y) == pytest.approx(metrics.probability_of_improvement(x, y))


def test_iqm_difference_is_the_difference_of_the_iqms():
    a, b = np.arange(1.0, 9.0), np.arange(11.0, 19.0)
    x = compare(iqm_difference, a, b, reps=500)
    assert x.point == -10.0 and x.low <= -10.0 <= x.high


def test_performance_profile_of_known_data_and_against_rliable():
    scores = np.array([[10.0, 0.0], [20.0, 50.0], [30.0, 100.0]])
    taus = np.array([0.0, 10.0, 25.0, 100.0])
    # Strictly above tau: 5 of 6 cells above 0, 4 above 10, 3 above 25, 0 above 100.
    assert score_distribution(scores, taus).tolist() == [5 / 6, 4 / 6, 3 / 6, 0.0]
    p = performance_profile(scores, taus, name="r", reps=500)
    assert np.all(p.low <= p.share) and np.all(p.share <= p.high)
    from rliable import library  # noqa: PLC0415 (arch imports slowly: only here)

    assert p.share.tolist() == pytest.approx(library.score_distributions(scores, taus).tolist())


def test_one_run_has_no_interval_and_unlike_tasks_are_named():
    x = iqm_interval([[3.0, 4.0]], name="one run")
    assert x.point == 3.5 and math.isnan(x.low) and math.isnan(x.high)
    with pytest.raises(StatsInputError, match=r"arm B: has 2 tasks, arm A has 1"):
        compare(iqm_difference, [1.0, 2.0], [[1.0, 2.0], [3.0, 4.0]], names=("arm A", "arm B"))
    with pytest.raises(StatsInputError, match="seed"):
        iqm_interval([1.0, 2.0], name="r", seed=None)  # type: ignore[arg-type]


def _triple(x: Interval) -> tuple[float, float, float]:
    return x.point, x.low, x.high
