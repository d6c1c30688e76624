"""How a vector env spreads a weighted mixture of configs over its envs, seeds them, and
what its `step` returns (shared by the Crafter and Heist vector envs; imports no game)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

StepResult = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]
"""A vector env's `step`: obs, reward float32, terminated bool, truncated bool, infos."""


def assign_configs(
    n_configs: int, num_envs: int, weights: Sequence[float] | None = None
) -> list[int]:
    """Config index per env: contiguous blocks sized by `weights` (largest remainder);
    8 envs over 4 equal-weight configs -> [0, 0, 1, 1, 2, 2, 3, 3]."""
    if n_configs < 1 or num_envs < 1:
        raise ValueError(f"need at least one config and one env, got {n_configs}, {num_envs}")
    w = np.ones(n_configs) if weights is None else np.asarray(weights, float)
    if w.shape != (n_configs,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(
            f"weights: expected {n_configs} non-negative numbers with a positive sum, got {weights}"
        )
    quota = w / w.sum() * num_envs
    counts = np.floor(quota).astype(int)
    order = sorted(range(n_configs), key=lambda i: (-(quota[i] - counts[i]), i))
    for i in order[: num_envs - counts.sum()]:
        counts[i] += 1
    return [i for i in range(n_configs) for _ in range(counts[i])]


def env_seed(seed: int, index: int) -> int:
    """Env `index`'s seed under vector seed `seed`."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0] % (2**31 - 1))
