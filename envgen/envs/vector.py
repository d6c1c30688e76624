"""`CrafterVecEnv`: many `CrafterEnv`s in worker processes, observations in shared memory.

The paper trains "spread in parallel across the N configs" (ENVGEN_PAPER.md, step 2):
`assign_configs` gives each env one config of a weighted mixture, deterministically.
Env i's seed derives from (seed, i) only, so results do not depend on `num_workers`.
Envs are split into `num_workers` contiguous blocks. The parent process steps the
first block itself and `num_workers - 1` worker processes step the others, so on a
machine with as many cores as workers no process waits idle for another's core
(measured: docs/crafter.md, "Vector env"). Workers exchange only a command word per
call: actions, observations, rewards and flags live in shared arrays; finished
episodes' summaries come back through the pipe.
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
        self._local = _Block(
            self._slices[0],
            [env_seed(seed, i) for i in range(self._slices[0].start, self._slices[0].stop)],
            self._shared(),
            self.configs,
            self.config_indices,
        )
        context = mp.get_context("forkserver")
        self._conns = []
        self._procs = []
        for block in self._slices[1:]:
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
        """CPU seconds used so far by each process stepping envs, the parent first (benchmarks)."""
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
        try:
            local = self._local.handle(command, data)
        except Exception:
            self.close()
            raise
        replies = [local] + [conn.recv() for conn in self._conns]
        for reply in replies:
            if isinstance(reply, BaseException):
                self.close()
                raise RuntimeError("a CrafterVecEnv worker failed") from reply
        return replies


class _Block:
    """Envs block.start..block.stop-1 over the shared arrays; one method per command."""

    def __init__(self, block: slice, seeds: list[int], shared: tuple, configs, config_indices):
        obs_raw, actions_raw, rewards_raw, flags_raw, n = shared
        self.obs = np.frombuffer(obs_raw, np.uint8).reshape((n, *OBS_SHAPE))
        self.actions = np.frombuffer(actions_raw, np.int64)
        self.rewards = np.frombuffer(rewards_raw, np.float32)
        self.flags = np.frombuffer(flags_raw, np.int8).reshape(2, n)
        self.indices = range(block.start, block.stop)
        self.envs = {
            i: CrafterEnv(configs[config_indices[i]], seed=s)
            for i, s in zip(self.indices, seeds, strict=True)
        }
        self.config_of = {i: config_indices[i] for i in self.indices}
        self.returns = dict.fromkeys(self.indices, 0.0)
        self.lengths = dict.fromkeys(self.indices, 0)

    def reset_env(self, i: int) -> None:
        self.obs[i], _ = self.envs[i].reset()
        self.returns[i], self.lengths[i] = 0.0, 0

    def handle(self, command: str, data: Any) -> Any:
        """Carry out one command; returns the reply the parent collects."""
        if command == "reset":
            for i in self.indices:
                self.reset_env(i)
            return None
        if command == "step":
            return self.step()
        if command == "cpu":
            return time.process_time()
        if command == "mixture":
            new_configs, new_indices = data
            for i in self.indices:
                self.config_of[i] = new_indices[i]
                self.envs[i].set_config(new_configs[new_indices[i]])
                self.reset_env(i)
            return None
        raise ValueError(f"unknown vec-env command {command!r}")

    def step(self) -> list[tuple[int, dict[str, Any]]]:
        episodes = []
        for i in self.indices:
            ob, reward, terminated, truncated, info = self.envs[i].step(int(self.actions[i]))
            self.returns[i] += reward
            self.lengths[i] += 1
            self.rewards[i], self.flags[0, i], self.flags[1, i] = reward, terminated, truncated
            if terminated or truncated:
                episode = {
                    "achievements": info["achievements"],
                    "return": self.returns[i],
                    "length": self.lengths[i],
                    "config_index": self.config_of[i],
                }
                episodes.append((i, episode))
                self.reset_env(i)
            else:
                self.obs[i] = ob
        return episodes


def _worker(conn, block, seeds, shared, configs, config_indices) -> None:
    """A worker process: run one `_Block` until told to close."""
    envs = _Block(block, seeds, shared, configs, config_indices)
    while True:
        command, data = conn.recv()
        if command == "close":
            break
        try:
            conn.send(envs.handle(command, data))
        except Exception as exc:  # report to the parent, which raises it
            conn.send(exc)
    conn.close()
