"""The fix for stock Crafter's run-to-run divergence (danijar/crafter#31, #36).

`crafter.engine.World` keeps the objects of each chunk in a Python `set`. A set of
objects iterates in an order that follows their memory addresses, and
`crafter.Env._balance_object` picks the creature to despawn by an index into that
order, so two `crafter.Env(seed=7919)` in one process drift apart after a few hundred
steps. Replacing each set by an insertion-ordered set (a dict whose values are unused)
makes the order a function of the game's history only. `CrafterEnv` uses the same
ordering; the fidelity tests apply `make_deterministic` to a stock env as reference.
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
    """Patch a stock `crafter.Env` (before its first reset) to use `DeterministicWorld`.

    Returns the same env, for chaining: ``make_deterministic(crafter.Env(seed=s))``.
    """
    world = env._world
    world.__class__ = DeterministicWorld
    world.reset()
    return env
