"""Imported once by the forkserver that starts `CrafterVecEnv`'s worker processes.

It loads the vector env's modules and Crafter's compiled functions (numba's on-disk cache)
into the forkserver (`warm_up`), so that workers forked from it, for every evaluation and
curriculum validation agent, start with them loaded (docs/crafter.md, "Vector env"). The
warm-up world is thrown away and no engine state is global, so no number changes.
"""

import sys

from envgen.envs import vector  # noqa: F401  (the worker's code, loaded for every fork)
from envgen.envs.crafter.env import CrafterEnv


def warm_up() -> None:
    """Play one step of a throw-away world: loads every compiled function a reset uses."""
    env = CrafterEnv(seed=0)
    env.reset()
    env.step(0)


try:
    warm_up()
except Exception as exc:  # noqa: BLE001 - a forkserver that died here would hide the cause
    # Workers then start cold and meet the same error in their own envs.
    print(f"envgen: vector env workers start cold: warm-up failed: {exc}", file=sys.stderr)
