"""The pure part of `envgen bench rank`: scores per budget and how alike two rankings are.

Kept apart from the training so that tests check it in milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import spearmanr

from envgen.scoring import summarize


def budget_scores(episodes: Sequence[Mapping[str, Any]], budgets: Sequence[int]) -> list[float]:
    """Crafter score at each budget over the episodes that ended by then (`step` <= budget),
    0.0 when none did: how the curricula score a validation agent of `validation_steps`."""
    out = []
    for budget in budgets:
        done = [ep for ep in episodes if ep["step"] <= budget]
        out.append(summarize(done)["score"] if done else 0.0)
    return out


def curriculum_order(scores: Sequence[float]) -> list[int]:
    """Indices by score, highest (easiest) first, ties in pool order: the curricula's sort."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def rank_agreement(a: Sequence[float], b: Sequence[float], k: int = 4) -> dict[str, Any]:
    """Spearman's rho of two score lists and the overlap of their easiest / hardest `k`:
    how often two seeds would pick the same environments for Easy-to-hard (the easiest k)
    and Adversarial (the hardest k); by chance k*k/n. rho is None when either list is
    constant; its 95% interval (Fisher's z) tells a real difference between budgets from
    the noise of 16 environments."""
    if len(a) != len(b) or len(a) < 2 * k:
        raise ValueError(f"need two equally long score lists of at least {2 * k}")
    constant = len(set(a)) == 1 or len(set(b)) == 1
    rho = math.nan if constant else float(spearmanr(a, b).statistic)
    order_a, order_b = curriculum_order(a), curriculum_order(b)
    return {
        "rho": None if math.isnan(rho) else round(rho, 4),
        "rho_ci95": fisher_interval(rho, len(a)),
        "top_overlap": len(set(order_a[:k]) & set(order_b[:k])),
        "bottom_overlap": len(set(order_a[-k:]) & set(order_b[-k:])),
        "overlap_chance": round(k * k / len(a), 2),
    }


def fisher_interval(rho: float, n: int) -> list[float] | None:
    """Approximate 95% interval of a rank correlation over n pairs (Fisher's z)."""
    if math.isnan(rho) or n < 4:
        return None
    z, half = math.atanh(max(-0.999999, min(0.999999, rho))), 1.96 / math.sqrt(n - 3)
    return [round(math.tanh(z - half), 2), round(math.tanh(z + half), 2)]
