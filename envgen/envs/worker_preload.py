"""Imported once by the forkserver that starts `CrafterVecEnv`'s worker processes.

Importing this loads the vector env's modules and Crafter's compiled world generation
(numba's on-disk cache) into the forkserver, by playing one step of one world. Every
worker is forked from that process, so it starts with them loaded instead of importing
and loading them itself: about 1.5 s per worker on a 2-core machine, paid again by
each evaluation and each curriculum validation agent, which open a vector env apiece
(measured in docs/crafter.md, "Vector env"). The warm-up world is thrown away; workers
seed their own envs, and no engine state is global, so no number changes.
"""

from envgen.envs import vector  # noqa: F401  (the worker's code, loaded for every fork)
from envgen.envs.crafter.env import CrafterEnv

try:
    _warm = CrafterEnv(seed=0)
    _warm.reset()
    _warm.step(0)
    del _warm
except Exception:  # noqa: BLE001, S110 - a forkserver that died here would hide the cause;
    pass  # a worker meets the same error in its own env and reports it to the parent
