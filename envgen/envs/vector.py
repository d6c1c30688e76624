"""`CrafterVecEnv`: many `CrafterEnv`s in worker processes, observations in shared memory.

The paper trains "spread in parallel across the N configs" (ENVGEN_PAPER.md, step 2):
`assign_configs` gives each env one config of a weighted mixture, deterministically.
Env i's seed derives from (seed, i) only, so results do not depend on `num_workers`.
Workers hold contiguous blocks of envs and exchange only a command word per call:
actions, observations, rewards and flags live in shared arrays; finished episodes'
summaries come back through the pipe.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.crafter.env import CrafterEnv
from envgen.envs.mixture import assign_configs, env_seed

OBS_SHAPE = CrafterEnv.observation_shape


class CrafterVecEnv:
    """`num_envs` Crafter envs with auto-reset; see the module docstring.

    When env i's episode ends, `step` returns the first observation of its next episode
    in obs[i] and `infos[i]["episode"] = {"achievements", "return", "length",
    "config_index"}`; other infos are empty dicts.
    """

    def __init__(
        self,
        configs: Sequence[CrafterConfig],
        num_envs: int,
        seed: int,
        weights: Sequence[float] | None = None,
        num_workers: int | None = None,
    ):
        self.num_envs = int(num_envs)
        self.configs = list(configs)
        self.config_indices = assign_configs(len(self.configs), self.num_envs, weights)
        workers = min(self.num_envs, os.cpu_count() or 1) if num_workers is None else num_workers
        if not 1 <= workers <= self.num_envs:
            raise ValueError(f"num_workers: must be in [1, num_envs={num_envs}], got {workers}")
        self.num_workers = workers
        n = self.num_envs
        self._obs_raw = mp.RawArray("B", n * int(np.prod(OBS_SHAPE)))
        self._actions_raw = mp.RawArray("q", n)
        self._rewards_raw = mp.RawArray("f", n)
        self._flags_raw = mp.RawArray("b", 2 * n)
        self._obs = np.frombuffer(self._obs_raw, np.uint8).reshape((n, *OBS_SHAPE))
        self._actions = np.frombuffer(self._actions_raw, np.int64)
        self._rewards = np.frombuffer(self._rewards_raw, np.float32)
        self._flags = np.frombuffer(self._flags_raw, np.int8).reshape(2, n)
        bounds = np.linspace(0, n, workers + 1).astype(int)
        self._slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        context = mp.get_context("forkserver")
        self._conns = []
        self._procs = []
        for block in self._slices:
            parent, child = context.Pipe()
            seeds = [env_seed(seed, i) for i in range(block.start, block.stop)]
            proc = context.Process(
                target=_worker,
                args=(child, block, seeds, self._shared(), self.configs, self.config_indices),
                daemon=True,
            )
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        self._closed = False

    def _shared(self) -> tuple[Any, ...]:
        return (self._obs_raw, self._actions_raw, self._rewards_raw, self._flags_raw, self.num_envs)

    def reset(self) -> np.ndarray:
        """Start a new episode in every env; returns obs (num_envs, 64, 64, 3) uint8."""
        self._call("reset", None)
        return self._obs.copy()

    @property
    def last_obs(self) -> np.ndarray:
        """The latest observations (after `reset`, `step` or `set_mixture`)."""
        return self._obs.copy()

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every env: obs, reward float32, terminated bool, truncated bool, infos."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions: expected shape ({self.num_envs},), got {actions.shape}")
        self._actions[:] = actions
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for episodes in self._call("step", None):
            for index, episode in episodes:
                infos[index]["episode"] = episode
        return (
            self._obs.copy(),
            self._rewards.copy(),
            self._flags[0].astype(bool),
            self._flags[1].astype(bool),
            infos,
        )

    def set_mixture(
        self, configs: Sequence[CrafterConfig], weights: Sequence[float] | None = None
    ) -> None:
        """Switch to a new config mixture: every env resets into its new config at once.

        Processes are kept; the new first observations are in `last_obs`.
        """
        self.configs = list(configs)
        self.config_indices = assign_configs(len(self.configs), self.num_envs, weights)
        self._call("mixture", (self.configs, self.config_indices))

    def worker_cpu_seconds(self) -> list[float]:
        """CPU seconds each worker process has used so far (for benchmarks)."""
        return self._call("cpu", None)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for conn in self._conns:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        for conn in self._conns:
            conn.close()

    def __enter__(self) -> CrafterVecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def _call(self, command: str, data: Any) -> list[Any]:
        if self._closed:
            raise RuntimeError("CrafterVecEnv is closed")
        for conn in self._conns:
            conn.send((command, data))
        replies = [conn.recv() for conn in self._conns]
        for reply in replies:
            if isinstance(reply, BaseException):
                self.close()
                raise RuntimeError("a CrafterVecEnv worker failed") from reply
        return replies


def _worker(conn, block, seeds, shared, configs, config_indices) -> None:
    """Run envs block.start..block.stop-1 until told to close."""
    obs_raw, actions_raw, rewards_raw, flags_raw, n = shared
    obs = np.frombuffer(obs_raw, np.uint8).reshape((n, *OBS_SHAPE))
    actions = np.frombuffer(actions_raw, np.int64)
    rewards = np.frombuffer(rewards_raw, np.float32)
    flags = np.frombuffer(flags_raw, np.int8).reshape(2, n)
    indices = range(block.start, block.stop)
    envs = {
        i: CrafterEnv(configs[config_indices[i]], seed=s)
        for i, s in zip(indices, seeds, strict=True)
    }
    config_of = {i: config_indices[i] for i in indices}
    returns = dict.fromkeys(indices, 0.0)
    lengths = dict.fromkeys(indices, 0)

    def reset(i: int) -> None:
        obs[i], _ = envs[i].reset()
        returns[i], lengths[i] = 0.0, 0

    while True:
        command, data = conn.recv()
        try:
            if command == "close":
                break
            if command == "reset":
                for i in indices:
                    reset(i)
                conn.send(None)
            elif command == "step":
                episodes = []
                for i in indices:
                    ob, reward, terminated, truncated, info = envs[i].step(int(actions[i]))
                    returns[i] += reward
                    lengths[i] += 1
                    rewards[i], flags[0, i], flags[1, i] = reward, terminated, truncated
                    if terminated or truncated:
                        episode = {
                            "achievements": info["achievements"],
                            "return": returns[i],
                            "length": lengths[i],
                            "config_index": config_of[i],
                        }
                        episodes.append((i, episode))
                        reset(i)
                    else:
                        obs[i] = ob
                conn.send(episodes)
            elif command == "cpu":
                conn.send(time.process_time())
            elif command == "mixture":
                new_configs, new_indices = data
                for i in indices:
                    config_of[i] = new_indices[i]
                    envs[i].set_config(new_configs[new_indices[i]])
                    reset(i)
                conn.send(None)
        except Exception as exc:  # report to the parent, which raises it
            conn.send(exc)
    conn.close()
