"""CrafterVecEnv: config spread, auto-reset episodes, independence from num_workers."""

from __future__ import annotations

import importlib
import multiprocessing as mp
import re
import time

import numpy as np
import pytest

from envgen.envs.crafter import CrafterConfig, CrafterEnv
from envgen.envs.mixture import assign_configs, env_seed
from envgen.envs.vector import (
    PRELOAD,
    WORKERS_VARIABLE,
    CrafterVecEnv,
    _Block,
    default_num_workers,
    usable_cores,
)
from envgen.errors import ConfigError

CONFIGS = [CrafterConfig(length=40), CrafterConfig(target_biome="mountain", length=25)]


def test_assign_configs_spreads_envs() -> None:
    assert assign_configs(4, 8) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert assign_configs(2, 8, [3, 1]) == [0] * 6 + [1] * 2
    assert assign_configs(3, 4) == [0, 0, 1, 2]
    with pytest.raises(ValueError, match="weights"):
        assign_configs(2, 4, [1, -1])


def _run(num_workers: int, steps: int = 60):
    rng = np.random.RandomState(0)
    trace, episodes = [], []
    with CrafterVecEnv(CONFIGS, 4, seed=5, num_workers=num_workers) as vec:
        trace.append(vec.reset())
        for _ in range(steps):
            obs, reward, terminated, truncated, infos = vec.step(rng.randint(17, size=4))
            trace += [obs, reward, terminated, truncated]
            episodes += [(i, info["episode"]) for i, info in enumerate(infos) if info]
        vec.set_mixture([CrafterConfig(target_biome="grassland")])
        trace.append(vec.last_obs)
        _, _, _, _, infos = vec.step(np.zeros(4, np.int64))
    return trace, episodes


def test_results_do_not_depend_on_num_workers() -> None:
    trace_1, episodes_1 = _run(1)
    trace_2, episodes_2 = _run(2)
    assert all(np.array_equal(a, b) for a, b in zip(trace_1, trace_2, strict=True))
    assert episodes_1 == episodes_2
    # Mountain envs (2, 3) are truncated at 25 steps; episode infos carry the config.
    ended = {i: e for i, e in episodes_1 if e["length"] == 25}
    assert {2, 3} <= set(ended) and all(ended[i]["config_index"] == 1 for i in (2, 3))
    assert all(
        set(e) == {"achievements", "return", "length", "config_index"} for _, e in episodes_1
    )


def test_env_matches_single_crafter_env() -> None:
    """Env i runs CrafterEnv(config, seed=env_seed(seed, i)), auto-reset included."""
    single = CrafterEnv(CONFIGS[1], seed=env_seed(5, 3))
    first, _ = single.reset()
    trace, _ = _run(1, steps=30)
    assert np.array_equal(trace[0][3], first)
    rng = np.random.RandomState(0)
    for t in range(30):
        actions = rng.randint(17, size=4)
        obs, *_ = single.step(int(actions[3]))
        if t == 24:  # truncated: the vector env shows the next episode's first frame
            obs, _ = single.reset()
        assert np.array_equal(trace[1 + 4 * t][3], obs)


def test_set_mixture_resets_into_new_configs() -> None:
    """Each env starts its next episode (seeds go on) in its new config at once."""
    trace, _ = _run(1, steps=3)
    for i in range(4):
        expected = CrafterEnv(CrafterConfig(target_biome="grassland"), seed=env_seed(5, i))
        expected.reset()
        assert np.array_equal(trace[-1][i], expected.reset()[0])


def test_bad_actions_shape_is_rejected() -> None:
    with CrafterVecEnv(CONFIGS, 2, seed=0, num_workers=1) as vec:
        vec.reset()
        with pytest.raises(ValueError, match="actions"):
            vec.step(np.zeros(3, np.int64))


def test_idle_time_prepares_next_worlds_without_changing_episodes() -> None:
    """A block that waits while another generates a world prepares one of its own."""
    n = 2
    shared = (
        mp.RawArray("B", n * int(np.prod(CrafterEnv.observation_shape))),
        mp.RawArray("q", n),
        mp.RawArray("f", n),
        mp.RawArray("b", 2 * n),
        n,
    )
    seeds = [env_seed(5, i) for i in range(n)]
    block = _Block(slice(0, n), seeds, shared, CONFIGS, [0, 1], busy_words=[])
    block.handle("reset", None)
    other = np.zeros(1, np.int64)
    block.use_idle_time([(other, 0)])  # no estimate of a world's cost yet: nothing
    assert not any(env.next_world_ready for env in block.envs.values())
    block.reset_ns = 1e6
    block.use_idle_time([(other, 0)])  # the other block is not busy: nothing
    assert not any(env.next_world_ready for env in block.envs.values())
    other[0] = time.perf_counter_ns() + 10**12  # busy for long
    block.use_idle_time([(other, 0)])
    block.use_idle_time([(other, 0)])
    assert all(env.next_world_ready for env in block.envs.values()) and block.prepare_ns > 0
    reference = CrafterEnv(CONFIGS[1], seed=seeds[1])
    reference.reset()
    block.actions[:] = 0
    for _ in range(25):  # env 1's config truncates at 25: its prepared world comes next
        episodes = block.step()
        reference.step(0)
    assert [i for i, _ in episodes] == [1] and not block.envs[1].next_world_ready
    assert np.array_equal(block.obs[1], reference.reset()[0])


def _steps(vec, rng: np.random.RandomState, steps: int) -> list:
    trace = []
    for _ in range(steps):
        obs, reward, terminated, truncated, infos = vec.step(rng.randint(17, size=vec.num_envs))
        trace += [obs, reward, terminated, truncated, [sorted(i) for i in infos], infos]
    return trace


def test_state_snapshot_continues_every_episode_exactly() -> None:
    """A checkpoint keeps running episodes: a new vec env (other worker count) restored
    from `get_state` plays on exactly as the original, episode returns and lengths too."""
    rng = np.random.RandomState(3)
    with CrafterVecEnv(CONFIGS, 4, seed=5, num_workers=2) as vec:
        vec.reset()
        _steps(vec, rng, 30)  # mid-episode everywhere (lengths 25 and 40)
        state = vec.get_state()
        rng_state = rng.get_state()
        expected = _steps(vec, rng, 50)
    rng.set_state(rng_state)
    with CrafterVecEnv([CrafterConfig()], 4, seed=999, num_workers=1) as restored:
        restored.set_state(state)
        assert np.array_equal(restored.last_obs, state["obs"])
        got = _steps(restored, rng, 50)
    ended = [e for infos in expected[5::6] for e in infos if e]
    assert ended and all(e["episode"]["length"] in (25, 40) for e in ended)
    for a, b in zip(expected, got, strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_mixture_switch_counts_the_episodes_it_ends() -> None:
    with CrafterVecEnv(CONFIGS, 4, seed=5, num_workers=1) as vec:
        vec.reset()
        assert vec.set_mixture(CONFIGS[:1]) == 0  # nothing played yet
        _steps(vec, np.random.RandomState(0), 3)
        assert vec.set_mixture(CONFIGS[1:]) == 4


def test_default_worker_count_comes_from_the_variable_or_the_cores(monkeypatch) -> None:
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    assert default_num_workers(64) == min(64, usable_cores())
    assert default_num_workers(1) == 1
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert (default_num_workers(8), default_num_workers(2)) == (3, 2)
    monkeypatch.setenv(WORKERS_VARIABLE, "1")
    with CrafterVecEnv(CONFIGS, 4, seed=0) as vec:  # no count named: the variable's
        assert vec.num_workers == 1
    for bad in ("0", "two", "-1", "1.5", "\u00b2"):
        monkeypatch.setenv(WORKERS_VARIABLE, bad)
        with pytest.raises(
            ConfigError,
            match=f"ENVGEN_ENV_WORKERS: must be a whole number >= 1, got '{re.escape(bad)}'",
        ):
            default_num_workers(4)


def test_the_forkserver_preload_imports_and_warms_up() -> None:
    """The preload's import errors are swallowed by multiprocessing and its warm-up
    errors by the module itself (workers would just start cold): check both here."""
    for name in PRELOAD:
        importlib.import_module(name)
    from envgen.envs.worker_preload import warm_up

    warm_up()
