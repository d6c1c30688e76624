"""Per-row summaries: mean, std, IQM and a t-interval of the mean; rliable's bootstrap.

A row's printed interval is Student's t (`envgen.stats.intervals.mean_interval`): its
coverage holds at a row's few runs, the bootstrap's does not (docs/stats.md,
"Intervals"). The bootstrap (`stratified_bootstrap`) serves rliable's views of
aggregates over tasks (Agarwal et al., 2021), never a table's interval; it is
`scipy.stats.bootstrap` (percentile, each task column an independent sample;
docs/stats.md, "Dependencies").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from envgen.errors import StatsInputError
from envgen.stats.intervals import mean_interval
from envgen.stats.runs import SampleStats, clean_runs, moments


def aggregate_iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean: 25%-trimmed mean over all runs x tasks (rliable's IQM). scipy's
    `trim_mean` cuts int(0.25 * n) values from each end, so under 4 values it equals the
    mean; ties are cut by position in sorted order."""
    flat = scores.reshape(*scores.shape[:-2], -1)
    return scipy.stats.trim_mean(flat, proportiontocut=0.25, axis=-1)


@dataclasses.dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap confidence interval."""

    point: float
    """The aggregate of the observed scores."""
    low: float
    """Lower bound; NaN with a single run (no spread to resample)."""
    high: float
    """Upper bound; NaN with a single run."""


def stratified_bootstrap(
    arms: Sequence[np.ndarray],
    statistic: Callable[..., Any],
    *,
    seed: int,
    reps: int,
    confidence: float,
    batch: int,
) -> Any:
    """scipy's percentile bootstrap with every task column of every arm (runs x tasks) an
    independent sample (stratified by task, arms independent); returns its confidence
    interval. `statistic(*arms)` sees the resampled arms, shaped as given plus a leading
    resample axis. `batch` (resamples drawn at a time) sets the order of the random draws,
    so each caller keeps its own."""
    _check_bootstrap_args(seed, reps, confidence)
    columns = [column for m in arms for column in m.T]
    edges = np.cumsum([0, *(m.shape[1] for m in arms)])

    def resampled(*cols: np.ndarray, axis: int) -> np.ndarray:
        stacked = [
            np.stack(cols[lo:hi], axis=-1) for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        ]
        return statistic(*stacked)

    return scipy.stats.bootstrap(
        tuple(columns),
        resampled,
        n_resamples=reps,
        batch=batch,
        vectorized=True,
        paired=False,
        axis=-1,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval


def _check_bootstrap_args(seed: int, reps: int, confidence: float) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise StatsInputError("seed", f"must be an explicit integer; got {seed!r}")
    if reps < 100:
        raise StatsInputError("reps", f"use at least 100 bootstrap resamples; got {reps}")
    if not 0 < confidence < 1:
        raise StatsInputError("confidence", f"must be in (0, 1), e.g. 0.95; got {confidence}")


@dataclasses.dataclass(frozen=True)
class RowSummary:
    """One row of a results table: its runs summarised."""

    n: int
    """Runs with a finite value."""
    n_nan: int
    """Runs dropped because their value was NaN (failed or missing)."""
    mean: float
    """Mean over runs."""
    std: float
    """Sample std over runs (ddof=1); 0.0 when all runs tie, NaN for a single run."""
    iqm: float
    """Interquartile mean over runs (the mean when n < 4)."""
    ci_low: float
    """Lower bound of the Student-t CI of the mean; NaN for a single run."""
    ci_high: float
    """Upper bound of the Student-t CI of the mean; NaN for a single run."""
    confidence: float
    """Coverage of [ci_low, ci_high], e.g. 0.95."""


def summarize_row(runs: ArrayLike, *, name: str = "runs", confidence: float = 0.95) -> RowSummary:
    """Summary of one row's per-run values, shape (n_runs,); NaN runs dropped and counted."""
    values, n_nan = clean_runs(runs, name)
    mean, std = moments(values)
    low, high = mean_interval(SampleStats(mean=mean, std=std, n=int(values.size)), confidence)
    return RowSummary(
        n=int(values.size),
        n_nan=n_nan,
        mean=mean,
        std=std,
        iqm=float(aggregate_iqm(values[:, None])),
        ci_low=low,
        ci_high=high,
        confidence=confidence,
    )
