"""rliable's views of a comparison of arms (Agarwal et al., NeurIPS 2021): IQM, P(a > b),
performance profiles, each with a stratified-bootstrap percentile interval.

One arm is a matrix of shape (n_runs, n_tasks) (a task: the Crafter score, or one
achievement's success rate); a run holding a NaN is dropped. The bootstrap resamples
each arm's runs within each task column, arms independently (rliable's
`StratifiedIndependentBootstrap`), percentile intervals. Not rliable's own: its 1.2.0
bootstraps ignore `random_state`, so an interval does not repeat (docs/stats.md,
"rliable's views"); here each is `stratified_bootstrap` from a fixed seed, and rliable's
`metrics` functions are the tests' reference for the point estimates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from envgen.errors import StatsInputError
from envgen.stats.runs import clean_score_matrix
from envgen.stats.summary import Interval, aggregate_iqm, stratified_bootstrap

SEED = 0
"""The bootstrap's seed for every reported view (fixed, so `envgen verify` re-derives them)."""
REPS = 10_000
"""Bootstrap resamples per interval (rliable's examples use 2,000 to 50,000)."""
PROFILE_REPS = 2_000
"""Resamples per performance profile's band (rliable's `create_performance_profile` default)."""
CONFIDENCE = 0.95

Statistic = Callable[..., np.ndarray]
"""Maps one matrix per arm, each of shape (..., n_runs, n_tasks), to shape (...) or (k, ...)."""


def improvement_probability(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) averaged over tasks, ties counted half (rliable's
    `probability_of_improvement`: the Mann-Whitney U over n_x n_y, per task). `x`: shape
    (..., n_x, n_tasks); `y`: shape (..., n_y, n_tasks); returns shape (...)."""
    diff = x[..., :, None, :] - y[..., None, :, :]  # (..., n_x, n_y, n_tasks)
    per_pair = (diff > 0) + 0.5 * (diff == 0)
    return per_pair.mean(axis=(-3, -2)).mean(axis=-1)


def iqm_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """IQM(x) - IQM(y), shapes as `improvement_probability`'s."""
    return aggregate_iqm(x) - aggregate_iqm(y)


def score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The performance profile: the share of runs x tasks scoring above each tau (rliable's
    `score_distributions`, strictly above). `scores`: (..., n_runs, n_tasks); returns
    shape (len(taus), ...)."""
    above = scores[..., None] > np.asarray(taus, dtype=float)
    return np.moveaxis(above.mean(axis=(-3, -2)), -1, 0)


def iqm_interval(scores: ArrayLike, *, name: str, seed: int = SEED, reps: int = REPS) -> Interval:
    """IQM over runs x tasks of one arm with its stratified-bootstrap interval."""
    return _interval([_matrix(scores, name)], aggregate_iqm, seed, reps)


def compare(
    statistic: Statistic,
    a: ArrayLike,
    b: ArrayLike,
    *,
    names: tuple[str, str] = ("a", "b"),
    seed: int = SEED,
    reps: int = REPS,
) -> Interval:
    """`statistic(a, b)` (`improvement_probability` or `iqm_difference`) with its
    interval, each arm resampled independently. The arms must share their tasks."""
    x, y = _matrix(a, names[0]), _matrix(b, names[1])
    if x.shape[1] != y.shape[1]:
        raise StatsInputError(
            names[1], f"has {y.shape[1]} tasks, {names[0]} has {x.shape[1]}: compare like tasks"
        )
    return _interval([x, y], statistic, seed, reps)


@dataclasses.dataclass(frozen=True)
class Profile:
    """A performance profile with its pointwise bootstrap band."""

    taus: np.ndarray
    """Thresholds, shape (k,)."""
    share: np.ndarray
    """Share of runs x tasks above each tau, shape (k,)."""
    low: np.ndarray
    """Lower band, shape (k,); NaN under 2 runs."""
    high: np.ndarray
    """Upper band, shape (k,); NaN under 2 runs."""


def performance_profile(
    scores: ArrayLike, taus: ArrayLike, *, name: str, seed: int = SEED, reps: int = PROFILE_REPS
) -> Profile:
    """One arm's score distribution at `taus` with its stratified-bootstrap band."""
    matrix = _matrix(scores, name)
    grid = np.asarray(taus, dtype=float)
    share = score_distribution(matrix, grid)
    if matrix.shape[0] < 2:
        nan = np.full_like(share, math.nan)
        return Profile(grid, share, nan, nan)
    ci = _bootstrap([matrix], lambda m: score_distribution(m, grid), seed, reps)
    return Profile(grid, share, np.asarray(ci.low), np.asarray(ci.high))


def _interval(arms: Sequence[np.ndarray], statistic: Statistic, seed: int, reps: int) -> Interval:
    point = float(statistic(*arms))
    if min(m.shape[0] for m in arms) < 2:  # one run: no spread to resample
        return Interval(point, math.nan, math.nan)
    ci = _bootstrap(arms, statistic, seed, reps)
    return Interval(point, float(ci.low), float(ci.high))


def _bootstrap(arms: Sequence[np.ndarray], statistic: Statistic, seed: int, reps: int):
    """`stratified_bootstrap` at the views' confidence, 500 resamples a batch."""
    return stratified_bootstrap(
        arms, statistic, seed=seed, reps=reps, confidence=CONFIDENCE, batch=500
    )


def _matrix(scores: ArrayLike, name: str) -> np.ndarray:
    return clean_score_matrix(scores, name)[0]
