"""Sampling For Learnability (SFL; Rutherford et al., NeurIPS 2024): score candidate
worlds by how learnable they are for the current policy, and keep the most learnable.

SFL keeps the levels of highest p (1 - p), p the policy's success rate: those it solves
sometimes (docs/loop.md, "SFL"). Crafter has 22 achievements instead of one goal, so a
world's learnability is the sum over achievements of p_i (1 - p_i). Torch-free, so that
what reads worlds does not load the agent; the rollout that measures p_i is
`envgen.loop.level_rollout`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


@dataclasses.dataclass(frozen=True)
class RolloutOutcome:
    """What rolling the policy out on M candidate worlds measured."""

    rates: tuple[tuple[float, ...], ...]
    """(M, 22): per candidate, the share (0-1) of its finished episodes that unlocked each
    achievement, in crafter's order; all 0 for a candidate that finished none."""
    episodes: tuple[int, ...]
    """(M,): finished episodes per candidate (the unfinished one of each env is dropped)."""
    env_steps: int
    """Env steps the rollouts took, all of them (counted in the run's budget)."""
    value_loss: tuple[float | None, ...] | None = None
    """(M,): PLR's score, the positive value loss over each candidate's finished episodes
    (`level_rollout.value_loss_by_config`), None where none finished; `plr` only."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutOutcome:
        loss = data.get("value_loss")
        return cls(
            tuple(tuple(float(p) for p in row) for row in data["rates"]),
            tuple(int(n) for n in data["episodes"]),
            int(data["env_steps"]),
            None if loss is None else tuple(None if v is None else float(v) for v in loss),
        )


def learnability(rates: ArrayLike) -> np.ndarray:
    """sum_i p_i (1 - p_i) per world: `rates` (M, K) success shares in [0, 1] -> (M,).

    0 for a world whose every achievement always or never succeeds; at most K / 4, when
    every achievement succeeds half the time.
    """
    p = np.asarray(rates, dtype=float)
    if p.ndim != 2 or np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"rates: expected shape (worlds, achievements) in [0, 1], got {p!r}")
    return (p * (1.0 - p)).sum(axis=1)


def top_n(scores: ArrayLike, n: int) -> list[int]:
    """Indices of the `n` highest scores, highest first; ties go to the lower index (the
    candidate sampled first), so the choice is a function of the scores alone."""
    s = np.asarray(scores, dtype=float)
    if not 1 <= n <= len(s):
        raise ValueError(f"n: expected 1..{len(s)}, got {n}")
    return sorted(range(len(s)), key=lambda i: (-s[i], i))[:n]
