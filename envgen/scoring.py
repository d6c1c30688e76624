"""The Crafter score and the statistics it is built from.

Episodes are dicts in crafter's `stats.jsonl` schema (`length`, `reward`,
`achievement_<name>`: times unlocked in the episode). The score is the paper's
(docs/paper.md, "Agent and training protocol", after Hafner 2021):
S = exp(mean_i ln(1 + s_i)) - 1 over the 22 achievements, s_i the percentage of
episodes in which achievement i was unlocked at least once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import crafter.constants
import numpy as np

ACHIEVEMENTS: tuple[str, ...] = tuple(crafter.constants.achievements)  # crafter's own list
ACHIEVEMENT_KEYS: tuple[str, ...] = tuple(f"achievement_{name}" for name in ACHIEVEMENTS)


def crafter_score(success_rates: Sequence[float] | np.ndarray) -> float:
    """Crafter score in percent from per-achievement success rates in percent (shape (22,))."""
    rates = np.asarray(success_rates, dtype=np.float64)
    if rates.shape != (len(ACHIEVEMENTS),):
        raise ValueError(
            f"success_rates: expected {len(ACHIEVEMENTS)} values (one per crafter achievement), "
            f"got shape {rates.shape}"
        )
    if np.any(rates < 0) or np.any(rates > 100):
        raise ValueError("success_rates: values are percentages and must lie in [0, 100]")
    return float(np.exp(np.mean(np.log1p(rates))) - 1.0)


def success_rates(episodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """{achievement: percent of episodes in which it was unlocked at least once}, in
    crafter's order; a ValueError for zero episodes."""
    unlocked = np.array([[ep[key] > 0 for key in ACHIEVEMENT_KEYS] for ep in episodes], bool)
    if len(unlocked) == 0:
        raise ValueError("episodes: need at least one finished episode to compute success rates")
    return dict(zip(ACHIEVEMENTS, (100.0 * unlocked.mean(axis=0)).tolist(), strict=True))


def summarize(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Score, mean reward, mean length and per-achievement success rates of some episodes."""
    rates = success_rates(episodes)
    return {
        "score": crafter_score(list(rates.values())),
        "reward": float(np.mean([ep["reward"] for ep in episodes])),
        "length": float(np.mean([ep["length"] for ep in episodes])),
        "episodes": len(episodes),
        "success_rates": rates,
    }


def final_phase_summary(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A Crafter run's report of its scored `final` phase (the run's and `envgen verify`'s):
    `summarize` less the length, and each achievement's first unlock in steps from the
    phase's start (None if never); None when no episode finished in the phase."""
    final = [ep for ep in episodes if ep["phase"] == "final"]
    if not final:
        return None
    start = min(ep["step"] - ep["length"] for ep in final)
    summary = summarize(final)
    del summary["length"]
    summary["first_unlock_step"] = {
        a: min((ep["step"] - start for ep in final if ep[key] > 0), default=None)
        for a, key in zip(ACHIEVEMENTS, ACHIEVEMENT_KEYS, strict=True)
    }
    return summary
