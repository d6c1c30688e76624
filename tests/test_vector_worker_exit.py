"""An env worker whose parent is gone exits quietly.

A worker blocked on its pipe when the vector env's process was killed printed a
20-line EOFError traceback (and exited 1): it now ends with status 0 and says nothing.
"""

from __future__ import annotations

from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.vector import CrafterVecEnv


def test_a_worker_whose_parent_end_closes_exits_quietly():
    env = CrafterVecEnv([CrafterConfig(length=20)], 2, 0, num_workers=2)
    env.reset()
    (proc,) = env._procs
    env._links[0].conn.close()  # what a killed parent leaves the worker: EOF on its pipe
    proc.join(timeout=30)
    env._links.clear()  # closed above
    env.close()
    assert proc.exitcode == 0
