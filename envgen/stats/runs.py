"""Validated run arrays and their moments: the one place NaNs, zero variance and n=1 are decided.

A run that produced no score (a crash, a missing log) arrives as NaN. It is dropped
here and counted, so every statistic downstream sees finite values and every report
can say how many runs were lost. Infinite values are bugs, not missing data, and raise.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import ArrayLike

from envgen.errors import StatsInputError


def clean_runs(runs: ArrayLike, name: str) -> tuple[np.ndarray, int]:
    """Per-run values of one row as a float array, NaN runs dropped. `runs`: shape
    (n_runs,). Returns (values of shape (n_finite,), number of NaNs dropped). Raises
    `StatsInputError` naming `name` for a wrong shape, an infinite value or no finite run at
    all."""
    values = np.asarray(runs, dtype=float)
    if values.ndim != 1:
        raise StatsInputError(
            name, f"expected one value per run, shape (n_runs,); got shape {values.shape}"
        )
    finite = _finite_rows(values, name)
    return values[finite], int(values.size - finite.sum())


def clean_score_matrix(scores: ArrayLike, name: str) -> tuple[np.ndarray, int]:
    """A runs x tasks score matrix (rliable layout) with runs holding any NaN dropped.
    `scores`: shape (n_runs,) (one task) or (n_runs, n_tasks). Returns (matrix of shape
    (n_finite_runs, n_tasks), number of runs dropped)."""
    values = np.asarray(scores, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] == 0:
        raise StatsInputError(
            name, f"expected scores of shape (n_runs, n_tasks); got shape {values.shape}"
        )
    finite = _finite_rows(values, name)
    return values[finite], int(values.shape[0] - finite.sum())


def _finite_rows(values: np.ndarray, name: str) -> np.ndarray:
    if np.isinf(values).any():
        raise StatsInputError(name, "contains an infinite value; fix the run that produced it")
    finite = ~np.isnan(values) if values.ndim == 1 else ~np.isnan(values).any(axis=1)
    if not finite.any():
        raise StatsInputError(name, f"no finite run among {len(values)}; nothing to summarise")
    return finite


def moments(values: np.ndarray) -> tuple[float, float]:
    """Mean and sample std (ddof=1) of finite values, shape (n,). When all values tie, the
    mean is that value and the std exactly 0.0 (no float round-off residue that would make
    two tied rows differ). The std of a single value is NaN: its spread cannot be
    estimated."""
    if np.all(values == values[0]):
        return float(values[0]), (0.0 if values.size > 1 else math.nan)
    return float(np.mean(values)), float(np.std(values, ddof=1))


@dataclasses.dataclass(frozen=True)
class SampleStats:
    """Mean, std and run count of one row: ours from runs, or the paper's reported ones."""

    mean: float
    """Mean over runs."""
    std: float
    """Sample standard deviation over runs (ddof=1); NaN when n is 1."""
    n: int
    """Number of runs."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise StatsInputError("n", f"a row needs at least one run; got n={self.n}")
        if not math.isfinite(self.mean):
            raise StatsInputError("mean", f"must be finite; got {self.mean!r}")
        if self.n >= 2 and not (math.isfinite(self.std) and self.std >= 0):
            raise StatsInputError("std", f"must be finite and >= 0 for n={self.n}; got {self.std}")

    @classmethod
    def of(cls, runs: ArrayLike, name: str) -> SampleStats:
        """Moments of one row's per-run values (NaN runs dropped, see `clean_runs`)."""
        values, _ = clean_runs(runs, name)
        mean, std = moments(values)
        return cls(mean=mean, std=std, n=int(values.size))
