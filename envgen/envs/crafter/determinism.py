"""The fix for stock Crafter's run-to-run divergence (danijar/crafter#31, #36).

`crafter.engine.World` keeps each chunk's objects in a `set`, which iterates in memory
address order, and `crafter.Env._balance_object` picks the creature to despawn by an
index into that order: two `crafter.Env(seed=7919)` in one process drift apart after a
few hundred steps. An insertion-ordered set makes the order a function of the game's
history only. `CrafterEnv` uses it; the fidelity tests patch a stock env as reference.
"""

from __future__ import annotations

import collections
from typing import Any

from crafter import engine


class OrderedSet(dict):
    """The subset of `set` that `crafter.engine.World` uses, iterating in insertion order."""

    def add(self, item: Any) -> None:
        self[item] = None

    def remove(self, item: Any) -> None:
        del self[item]


class DeterministicWorld(engine.World):
    """`crafter.engine.World` whose chunk sets iterate in insertion order."""

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._chunks = collections.defaultdict(OrderedSet)


def make_deterministic(env: Any) -> Any:
    """Patch a stock `crafter.Env` (before its first reset) to use `DeterministicWorld`;
    returns the same env, for chaining."""
    world = env._world
    world.__class__ = DeterministicWorld
    world.reset()
    return env
