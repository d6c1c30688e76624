"""Row summaries: moments, IQM and the stratified bootstrap, checked by hand and by numpy."""

import math
import warnings

import numpy as np
import pytest
import scipy.stats
from rliable import metrics

from envgen.errors import StatsInputError
from envgen.stats.runs import clean_score_matrix
from envgen.stats.summary import aggregate_iqm, stratified_bootstrap, summarize_row

pytestmark = pytest.mark.filterwarnings("error")


def mean(scores):
    return np.mean(scores, axis=(-2, -1))


def bootstrap(scores, statistic=mean, *, seed=0, reps=10_000):
    """The bootstrap interval of one arm's (n_runs, n_tasks) matrix, as rliable's views ask."""
    return stratified_bootstrap(
        [np.asarray(scores, float)], statistic, seed=seed, reps=reps, confidence=0.95, batch=1000
    )


def test_moments_hand_computed():
    s = summarize_row([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.n_nan, s.mean) == (4, 0, 2.5)
    assert s.std == pytest.approx(math.sqrt(5 / 3))  # ddof=1: (2.25+0.25+0.25+2.25)/3
    assert s.ci_low <= s.mean <= s.ci_high and s.confidence == 0.95


def test_iqm_with_ties_and_against_rliable():
    # 8 values, 2 cut from each end: mean of 1, 1, 5, 5.
    assert aggregate_iqm(np.array([[1, 1, 1, 1, 5, 5, 5, 5]], float).T) == 3.0
    assert summarize_row([9.0, 1.0, 2.0]).iqm == 4.0  # n < 4: the mean
    scores = np.random.default_rng(3).random((10, 5))
    assert aggregate_iqm(scores) == pytest.approx(metrics.aggregate_iqm(scores))


def test_single_run_has_nan_spread_not_a_warning():
    s = summarize_row([7.0])
    assert (s.n, s.mean, s.iqm) == (1, 7.0, 7.0)
    assert math.isnan(s.std) and math.isnan(s.ci_low) and math.isnan(s.ci_high)


def test_zero_variance_gives_exact_point_interval():
    s = summarize_row([0.1, 0.1, 0.1])
    assert (s.mean, s.std, s.ci_low, s.ci_high) == (0.1, 0.0, 0.1, 0.1)


def test_nan_runs_dropped_and_counted():
    s = summarize_row([1.0, np.nan, 3.0])
    assert (s.n, s.n_nan, s.mean) == (2, 1, 2.0)
    with pytest.raises(StatsInputError, match="row x: no finite run"):
        summarize_row([np.nan], name="row x")


def test_bootstrap_seed_is_required_and_explicit():
    scores = [np.array([[1.0], [2.0]])]
    with pytest.raises(TypeError):
        stratified_bootstrap(scores, mean, reps=1000, confidence=0.95, batch=1000)  # type: ignore[call-arg]
    with pytest.raises(StatsInputError, match="seed"):
        stratified_bootstrap(scores, mean, seed=None, reps=1000, confidence=0.95, batch=1000)  # type: ignore[arg-type]


def test_bootstrap_is_deterministic():
    scores = np.random.default_rng(1).normal(30, 1, (10, 1))
    first = bootstrap(scores, seed=7, reps=1000)
    assert tuple(first) == tuple(bootstrap(scores, seed=7, reps=1000))
    assert bootstrap(scores, seed=8, reps=1000).low != first.low


def _numpy_stratified_percentile(scores, reps, seed, confidence=0.95):
    """Independent reference: resample runs within each task column, percentile CI."""
    rng = np.random.default_rng(seed)
    n_runs, n_tasks = scores.shape
    idx = rng.integers(0, n_runs, size=(reps, n_runs, n_tasks))
    stats = scores[idx, np.arange(n_tasks)].mean(axis=(1, 2))
    tail = (1 - confidence) / 2 * 100
    return np.percentile(stats, [tail, 100 - tail])


def test_stratified_bootstrap_matches_independent_reference():
    scores = np.random.default_rng(2).gamma(2.0, 10.0, size=(12, 4))
    ours = bootstrap(scores, reps=20_000)
    ref = _numpy_stratified_percentile(scores, reps=20_000, seed=99)
    tolerance = 0.03 * (ref[1] - ref[0])  # Monte Carlo noise of two different streams
    assert ours.low == pytest.approx(ref[0], abs=tolerance)
    assert ours.high == pytest.approx(ref[1], abs=tolerance)


def test_bootstrap_is_stratified_by_task():
    # Each task constant across runs: resampling within tasks never changes the mean.
    scores = np.array([[0.0, 10.0]] * 5)
    ci = bootstrap(scores)
    assert (ci.low, ci.high) == (5.0, 5.0)


def test_row_interval_is_the_t_interval():
    runs = np.random.default_rng(4).normal(0.0, 1.0, 30)
    s = summarize_row(runs)
    half = scipy.stats.t.ppf(0.975, 29) * runs.std(ddof=1) / math.sqrt(30)
    assert (s.ci_low, s.ci_high) == pytest.approx((runs.mean() - half, runs.mean() + half))


def test_bad_shapes_and_arguments_name_the_field():
    with pytest.raises(StatsInputError, match=r"cube: expected scores of shape"):
        clean_score_matrix(np.zeros((2, 2, 2)), "cube")
    with pytest.raises(StatsInputError, match="reps"):
        bootstrap([[1.0], [2.0]], reps=10)
    with pytest.raises(StatsInputError, match="confidence"):
        summarize_row([1.0, 2.0], confidence=95)


def test_bootstrap_agrees_with_rliable_when_importable():
    try:
        from rliable import library
    except (ImportError, TypeError) as exc:  # arch 7.2 fails to import under pandas 3
        pytest.skip(f"rliable.library not importable here: {exc}")
    scores = np.random.default_rng(5).gamma(2.0, 10.0, size=(10, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arch deprecates random_state
        points, intervals = library.get_interval_estimates(
            {"row": scores},
            lambda x: np.array([metrics.aggregate_iqm(x)]),
            reps=20_000,
            random_state=np.random.RandomState(0),
        )
    ours = bootstrap(scores, aggregate_iqm, reps=20_000)
    low, high = intervals["row"][:, 0]
    tolerance = 0.03 * (high - low)  # Monte Carlo noise of two different streams
    assert aggregate_iqm(scores) == pytest.approx(points["row"][0])
    assert (ours.low, ours.high) == (
        pytest.approx(low, abs=tolerance),
        pytest.approx(high, abs=tolerance),
    )
