"""PLR-robust's level buffer and its score (Jiang et al. 2021, "Replay-Guided Adversarial
Environment Design"; docs/loop.md, "PLR-robust").

A buffer of at most K scored levels. Replay draws a level with probability

    P(i) = (1 - rho) x rank(score_i)^(-1/beta) / sum_j rank(score_j)^(-1/beta)
           + rho x staleness_i / sum_j staleness_j,

ranks over the filled slots, highest score first; staleness is how many draws and inserts
ago the level was last drawn or inserted (uniform while every level is fresh). A new
level replaces the slot of least replay weight when the buffer is full, if it scores
higher. The score is the positive value loss: per finished episode, the time-average of
the positive GAE advantages, averaged over the episodes (`episode_time_averages`).

These are jaxued's `LevelSampler` semantics (read, not copied), checked against values
its code computed (tests/data/jaxued_plr/). Pure numpy: what reads worlds never loads
the agent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def score_weights(scores: ArrayLike, size: int, temperature: float) -> np.ndarray:
    """Rank prioritization: (1 / rank)^(1 / temperature) over the first `size` slots,
    normalised; 0 on empty slots. Ties rank the lower slot first (a stable sort)."""
    s = np.asarray(scores, dtype=float)
    filled = np.arange(len(s)) < size
    order = np.argsort(-np.where(filled, s, -np.inf), kind="stable")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    w = np.where(filled, 1.0 / ranks, 0.0) ** (1.0 / temperature)
    return w / w.sum()


def staleness_weights(timestamps: ArrayLike, episode_count: int, size: int) -> np.ndarray:
    """Staleness (draws and inserts since a slot was last touched), normalised over the
    first `size` slots; uniform over them when every level is fresh."""
    t = np.asarray(timestamps, dtype=float)
    filled = np.arange(len(t)) < size
    w = np.where(filled, episode_count - t, 0.0)
    if w.sum() > 0:
        return w / w.sum()
    return filled / size


def replay_weights(
    scores: ArrayLike,
    timestamps: ArrayLike,
    episode_count: int,
    size: int,
    temperature: float,
    staleness: float,
) -> np.ndarray:
    """P(i) of the module docstring: (1 - rho) x score weights + rho x staleness weights."""
    w_s = score_weights(scores, size, temperature)
    w_c = staleness_weights(timestamps, episode_count, size)
    return (1.0 - staleness) * w_s + staleness * w_c


def episode_time_averages(metric: ArrayLike, dones: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per env of `metric` (T, E): the sum over its finished episodes of the episode's
    time-average, and the number of finished episodes (E,) each. `dones[t]` ends an
    episode after step t; an env's last, unfinished episode is left out."""
    m, d = np.asarray(metric, dtype=float), np.asarray(dones, dtype=bool)
    sums, counts = np.zeros(m.shape[1]), np.zeros(m.shape[1], dtype=int)
    running, steps = np.zeros(m.shape[1]), np.zeros(m.shape[1])
    for t in range(m.shape[0]):
        running += m[t]
        steps += 1
        sums += np.where(d[t], running / steps, 0.0)
        counts += d[t]
        running[d[t]] = 0.0
        steps[d[t]] = 0.0
    return sums, counts


@dataclasses.dataclass
class LevelBuffer:
    """At most `capacity` scored levels and their staleness clock (module docstring).

    `episode_count` counts draws and inserts (jaxued's clock): a draw stamps its slot with
    the new count, an insert attempt advances the count and stamps a slot it fills.
    """

    capacity: int
    temperature: float
    staleness: float
    levels: list[Any] = dataclasses.field(init=False, default_factory=list)
    scores: np.ndarray = dataclasses.field(init=False)
    timestamps: np.ndarray = dataclasses.field(init=False)
    episode_count: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.temperature <= 0 or not 0 <= self.staleness <= 1:
            raise ValueError(
                f"LevelBuffer: capacity >= 1, temperature > 0 and staleness in [0, 1]; got "
                f"{self.capacity}, {self.temperature}, {self.staleness}"
            )
        self.scores = np.full(self.capacity, -np.inf)
        self.timestamps = np.zeros(self.capacity, dtype=int)

    @property
    def size(self) -> int:
        return len(self.levels)

    def weights(self) -> np.ndarray:
        """Replay probabilities of the slots (0 on empty ones)."""
        return replay_weights(
            self.scores,
            self.timestamps,
            self.episode_count,
            self.size,
            self.temperature,
            self.staleness,
        )

    def insert(self, level: Any, score: float) -> int:
        """Put `level` in the next empty slot, or in place of the least-weighted level if
        `score` beats that level's; returns the slot, or -1 if it was not kept."""
        slot = self.size if self.size < self.capacity else int(np.argmin(self.weights()))
        kept = self.scores[slot] < score
        if kept:
            if slot == self.size:
                self.levels.append(level)
            else:
                self.levels[slot] = level
            self.scores[slot] = score
            self.timestamps[slot] = self.episode_count + 1
        self.episode_count += 1
        return slot if kept else -1

    def update(self, slot: int, score: float) -> None:
        """A replayed level's new score (its staleness is left as its draw set it)."""
        if not 0 <= slot < self.size:
            raise IndexError(f"slot {slot}: the buffer holds {self.size} levels")
        self.scores[slot] = score

    def sample(self, rng: np.random.Generator, n: int) -> list[int]:
        """`n` slots drawn one after another by `weights()`, with replacement; each draw
        stamps its slot before the next is drawn."""
        if self.size == 0:
            raise ValueError("LevelBuffer.sample: the buffer is empty")
        slots = []
        for _ in range(n):
            slot = int(rng.choice(self.capacity, p=self.weights()))
            self.episode_count += 1
            self.timestamps[slot] = self.episode_count
            slots.append(slot)
        return slots

    def state(self) -> dict[str, Any]:
        """Scores (None for -inf), stamps, size and clock: what a cycle records."""
        return {
            "scores": [None if np.isinf(s) else float(s) for s in self.scores[: self.size]],
            "timestamps": self.timestamps[: self.size].tolist(),
            "episode_count": self.episode_count,
        }
