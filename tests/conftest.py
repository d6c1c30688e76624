"""Test-session settings shared by every test module, and the order of files under xdist.

`make test` runs the suite on two pytest-xdist workers with `--dist loadfile`: each
file's tests run on one worker, in the file's order, so a module-scoped fixture (often
a real training run) is built once, and the Ray tests (one file) never overlap.
"""

from __future__ import annotations

import os

import pytest

# Before torch loads OpenMP: its threads wait asleep, not spinning. A run with two torch
# threads (tests/test_loop.py, "another machine") took 279 s instead of 39 s with one
# core taken by other work, since each spinning thread holds the core its partner needs;
# under xdist the other worker takes one. The wait policy changes no number.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Runs step their envs in their own process unless a test names a worker count: the two
# xdist workers already hold both cores, and a vector env's worker process would wait
# for one at every lock step (docs/crafter.md, "Vector env"). Subprocesses inherit it.
# Worker processes keep their own tests, which name the count (tests/test_vector_env.py,
# and one config of the results-version guard).
os.environ.setdefault("ENVGEN_ENV_WORKERS", "1")

from envgen.agents.threads import DEFAULT_TORCH_THREADS, set_torch_threads  # noqa: E402

# In-process runs must use the same torch thread count as the CLIs (`--torch-threads`),
# so that a run recorded with `envgen run` replays bit-identically inside a test.
set_torch_threads(DEFAULT_TORCH_THREADS)

# The longest files, longest first (minutes on 2 cores: the results-version guard,
# the Ray executor's file, the loop's real runs and its baselines): started last, one
# would run on alone while the other worker idles.
LONGEST = (
    "test_results_version.py",
    "test_pipeline_ray.py",
    "test_loop.py",
    "test_loop_baselines.py",
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the Crafter engine's numba functions into their on-disk cache
    (envgen/envs/crafter/__pycache__) once, before any test process starts: in a fresh
    clone the first tests of both workers, and the runs they start in subprocesses,
    otherwise each compile them at the same time (about 14 s of a core apiece)."""
    if hasattr(session.config, "workerinput") or session.config.option.collectonly:
        return  # an xdist worker (the controller has done it), or nothing will run
    from envgen.envs.crafter.env import CrafterEnv

    env = CrafterEnv()
    env.reset()
    env.step(0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, hand out the longest files first, then the other files with slow
    tests, then the rest. A serial run keeps the files' own order."""
    if not hasattr(config, "workerinput"):
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        if item.path.name in LONGEST:
            return LONGEST.index(item.path.name)
        return len(LONGEST) + (0 if item.path in slow_files else 1)

    items.sort(key=rank)  # stable: every worker collects the same order
