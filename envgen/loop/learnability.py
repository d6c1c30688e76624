"""Sampling For Learnability (SFL; Rutherford et al., NeurIPS 2024): score candidate
worlds by how learnable they are for the current policy, and keep the most learnable.

SFL rolls the current policy out on each of many randomly sampled levels, measures each
level's success rate p and keeps the levels of highest p (1 - p): those the agent solves
sometimes, neither always nor never (docs/loop.md, "SFL"). Crafter has 22 achievements
instead of one goal, so a world's learnability is the sum over achievements of
p_i (1 - p_i), p_i the share of its rollout episodes that unlocked achievement i.

Pure functions over arrays (`learnability`, `top_n`), torch-free so that what reads
worlds (the report, design quality) does not load the agent; the rollout that measures
p_i is `envgen.loop.level_rollout`, the designer that uses them is `envgen.loop.
world_designers.SFLDesigner`, and the runner's `curation_rollouts` keeps each cycle's
rollouts on disk.
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
    (`envgen.loop.level_buffer.positive_value_loss`), None where none finished; measured
    for the `plr` designer only (SFL's records keep their three fields)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rates": self.rates,
            "episodes": self.episodes,
            "env_steps": self.env_steps,
        }
        if self.value_loss is not None:
            out["value_loss"] = self.value_loss
        return out

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
