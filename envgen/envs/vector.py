"""`CrafterVecEnv`: many `CrafterEnv`s in worker processes, observations in shared memory.

The paper trains in the N configs in parallel (docs/paper.md, "The method in four steps"):
`assign_configs` gives each env one config of a weighted mixture, deterministically, and
env i's seed derives from (seed, i) only, so results do not depend on `num_workers`. The
parent steps the first of `num_workers` contiguous blocks of envs itself and a worker
process steps each other, so with as many cores as workers no process waits for a core.

A lock step is signalled through shared control words, not the pipe: waking a process
blocked on a pipe costs tens of microseconds of the ~300 us a block of four envs takes.
Each side spins briefly on the word it waits for, then dozes on the pipe with a flag up
so the other side sends a wake-up (`_Link`). Finished episodes, errors and the rare
commands (reset, mixture, close) go through the pipe. The spin relies on x86's ordered
stores (the worker's observations are visible before its "done" word); elsewhere every
step goes through the pipe (`SHARED_SIGNALS`). Measured in docs/crafter.md, "Vector env".
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing as mp
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from envgen.envs.crafter import snapshot
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.crafter.env import CrafterEnv
from envgen.envs.mixture import StepResult, assign_configs, env_seed
from envgen.envs.plain import config_from_plain, config_to_plain
from envgen.errors import ConfigError
from envgen.lifetime import die_with_parent

OBS_SHAPE = CrafterEnv.observation_shape
WORKERS_VARIABLE = "ENVGEN_ENV_WORKERS"
PRELOAD: tuple[str, ...] = ("envgen.envs.worker_preload",)
"""Modules the forkserver imports before forking workers (`envgen bench env --starts`
empties it to time the cold start it saves)."""

# x86 keeps stores in order (TSO): data written before a control word is seen with it.
SHARED_SIGNALS = platform.machine().lower() in {"x86_64", "amd64", "i386", "i686"}
SPIN_SECONDS = 0.004
"""How long a side spins for its control word before dozing: covers a reset (~3 ms) on
the other side. No spinning when the processes outnumber the usable cores."""
DOZE_SECONDS = 0.001
"""Poll timeout while dozing: bounds the delay if a wake-up crosses the dozing flag."""

# Control words of one worker (a row of the shared control array).
_COMMAND, _DONE, _MESSAGE, _WORKER_DOZING, _PARENT_DOZING, _WORKER_BUSY, _PARENT_BUSY = range(7)
_WORDS = 7
_WAKE = "wake"
_REACHED = object()


class CrafterVecEnv:
    """`num_envs` Crafter envs with auto-reset: when env i's episode ends, `step` returns
    its next episode's first observation in obs[i] and `infos[i]["episode"] =
    {"achievements", "return", "length", "config_index"}`; other infos are empty dicts."""

    def __init__(
        self,
        configs: Sequence[CrafterConfig],
        num_envs: int,
        seed: int,
        weights: Sequence[float] | None = None,
        num_workers: int | None = None,
        *,
        env_seeds: Sequence[int] | None = None,
        group_size: int | None = None,
        prepare_when_idle: bool = False,
    ):
        self.num_envs = int(num_envs)
        self.configs = list(configs)
        # A cohort (`envgen.agents.cohort`) steps several runs' envs as one vector: each
        # group of `group_size` envs is one run's, spread over the mixture as a run alone
        # would be, with that run's env seeds (`env_seeds`, one per env).
        self.group_size = self.num_envs if group_size is None else int(group_size)
        if self.group_size < 1 or self.num_envs % self.group_size:
            raise ValueError(f"group_size: must divide num_envs={num_envs}, got {group_size}")
        if env_seeds is not None and len(env_seeds) != self.num_envs:
            raise ValueError(f"env_seeds: expected {num_envs} seeds, got {len(env_seeds)}")
        n = self.num_envs
        seeds = [env_seed(seed, i) for i in range(n)] if env_seeds is None else list(env_seeds)
        self.config_indices = self._assign(weights)
        workers = default_num_workers(self.num_envs) if num_workers is None else num_workers
        if not 1 <= workers <= self.num_envs:
            raise ValueError(f"num_workers: must be in [1, num_envs={num_envs}], got {workers}")
        self.num_workers = workers
        # Observations, actions, rewards and (terminated, truncated) flags, in shared memory.
        shared = (
            mp.RawArray("B", n * int(np.prod(OBS_SHAPE))),
            mp.RawArray("q", n),
            mp.RawArray("f", n),
            mp.RawArray("b", 2 * n),
            n,
        )
        self._control_raw = mp.RawArray("q", _WORDS * max(workers - 1, 1))
        bounds = np.linspace(0, n, workers + 1).astype(int)
        self._slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        blocks = [(b, seeds[b], shared, self.configs, self.config_indices) for b in self._slices]
        control = np.frombuffer(self._control_raw, np.int64).reshape(-1, _WORDS)
        spin = SPIN_SECONDS if usable_cores() >= workers else 0.0
        context = mp.get_context("forkserver")
        # Workers fork from a server that has the engine loaded (envgen/envs/worker_preload.py).
        # The list is the process's and takes effect when its forkserver starts, with the
        # first vector env that has workers; the server then holds about 168 MiB.
        if workers > 1:
            context.set_forkserver_preload(list(PRELOAD))
        self._links: list[_Link] = []
        self._procs = []
        for k, block in enumerate(blocks[1:]):
            parent, child = context.Pipe()
            control_args = (self._control_raw, k, spin)
            proc = context.Process(
                target=_worker, args=(child, control_args, block, prepare_when_idle), daemon=True
            )
            proc.start()
            child.close()
            self._links.append(_Link(control[k], parent, spin))
            self._procs.append(proc)
        self._local = local = _Block(
            *blocks[0], busy_words=[(link.words, _PARENT_BUSY) for link in self._links]
        )
        self._obs, self._actions = local.obs, local.actions
        self._rewards, self._flags = local.rewards, local.flags
        workers_busy = [(link.words, _WORKER_BUSY) for link in self._links]
        self._idle = functools.partial(local.use_idle_time, workers_busy)
        self._closed = False

    def _assign(self, weights: Sequence[float] | None) -> list[int]:
        """Config index per env: each group of `group_size` envs spans the mixture."""
        group = assign_configs(len(self.configs), self.group_size, weights)
        return group * (self.num_envs // self.group_size)

    def reset(self) -> np.ndarray:
        """Start a new episode in every env; returns obs (num_envs, 64, 64, 3) uint8."""
        self._call("reset", None)
        return self._obs.copy()

    @property
    def last_obs(self) -> np.ndarray:
        """The latest observations (after `reset`, `step` or `set_mixture`)."""
        return self._obs.copy()

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env (`StepResult`)."""
        obs, *rest = self.step_view(actions)
        return (obs.copy(), *rest)  # type: ignore[return-value]

    def step_view(self, actions: np.ndarray) -> StepResult:
        """`step`, its observations not copied: the shared array itself, which the next
        step overwrites (a cohort copies it once, into the pinned upload buffer)."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions: expected shape ({self.num_envs},), got {actions.shape}")
        self._actions[:] = actions
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        replies = self._lock_step() if SHARED_SIGNALS else self._call("step", None)
        for episodes in replies:
            for index, episode in episodes:
                infos[index]["episode"] = episode
        return (
            self._obs,
            self._rewards.copy(),
            self._flags[0].astype(bool),
            self._flags[1].astype(bool),
            infos,
        )

    def set_mixture(
        self, configs: Sequence[CrafterConfig], weights: Sequence[float] | None = None
    ) -> int:
        """Switch to a new config mixture: every env resets into its new config at once (same
        processes, new first observations in `last_obs`). Returns the number of running
        episodes (at least one step played) the switch ended unlogged."""
        self.configs = list(configs)
        self.config_indices = self._assign(weights)
        return sum(self._call("mixture", (self.configs, self.config_indices)))

    def get_state(self) -> dict[str, Any]:
        """Every env mid-episode, its running return and length, and the observations, as
        plain data (`snapshot`, `envgen.envs.plain`) that a checkpoint stores unpickled:
        `set_state` on a vec env built with the same arguments continues exactly."""
        return {
            "configs": [config_to_plain(c) for c in self.configs],
            "config_indices": list(self.config_indices),
            "blocks": self._call("get_state", None),
            "obs": self._obs.copy(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore `get_state`'s snapshot (same num_envs and seed; any num_workers);
        ValueError (or KeyError, TypeError) when the snapshot is malformed."""
        if (count := len(state["config_indices"])) != self.num_envs:
            raise ValueError(f"state of {count} envs given to a vec env of {self.num_envs}")
        obs = state["obs"]
        if not isinstance(obs, np.ndarray) or obs.dtype != np.uint8 or obs.shape != self._obs.shape:
            raise ValueError(f"observations: expected uint8 {self._obs.shape}")
        configs = [config_from_plain(c) for c in state["configs"]]
        indices = list(state["config_indices"])
        if not all(type(k) is int and 0 <= k < len(configs) for k in indices):
            raise ValueError("config_indices: expected indices into configs")
        merged = {i: env for block in state["blocks"] for i, env in dict(block).items()}
        if set(merged) != set(range(self.num_envs)):
            raise ValueError(f"env states: expected envs 0..{self.num_envs - 1}")
        self.configs, self.config_indices = configs, indices
        self._check_open()  # each block is sent its own envs' states only
        for link, block in zip(self._links, self._slices[1:], strict=True):
            link.conn.send(("set_state", {i: merged[i] for i in range(block.start, block.stop)}))
        local = {i: merged[i] for i in range(self._slices[0].start, self._slices[0].stop)}
        self._checked([self._run_local("set_state", local)] + [link.recv() for link in self._links])
        self._obs[:] = obs

    def worker_cpu_seconds(self) -> list[float]:
        """CPU seconds used so far by each process stepping envs, the parent first (benchmarks)."""
        return self._call("cpu", None)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for link in self._links:
            with contextlib.suppress(OSError):  # a worker already gone: BrokenPipeError
                link.conn.send(("close", None))
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        for link in self._links:
            link.conn.close()

    def __enter__(self) -> CrafterVecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def _call(self, command: str, data: Any) -> list[Any]:
        """Run `command` in every block through the pipes; the replies, parent's first."""
        self._check_open()
        for link in self._links:
            link.conn.send((command, data))
        local = self._run_local(command, data)
        return self._checked([local] + [link.recv() for link in self._links])

    def _lock_step(self) -> list[Any]:
        """`_call("step")` signalled through the control words (see the module docstring)."""
        self._check_open()
        for link in self._links:
            link.words[_COMMAND] += 1
            link.wake(_WORKER_DOZING)
        replies = [self._run_local("step", None)]
        for link in self._links:
            reply = link.wait(_DONE, int(link.words[_COMMAND]), _PARENT_DOZING, self._idle)
            if reply is _REACHED:
                reply = link.recv() if link.words[_MESSAGE] else []
            replies.append(reply)
        return self._checked(replies)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("CrafterVecEnv is closed")

    def _run_local(self, command: str, data: Any) -> Any:
        try:
            return self._local.handle(command, data)
        except Exception:
            self.close()
            raise

    def _checked(self, replies: list[Any]) -> list[Any]:
        for reply in replies:
            if isinstance(reply, BaseException):
                self.close()
                raise RuntimeError("a CrafterVecEnv worker failed") from reply
        return replies


class _Link:
    """One worker's control words and pipe end, as either side sees them. Words: _COMMAND
    (steps asked, parent writes), _DONE (steps finished, worker writes), _MESSAGE (the
    last step's reply is in the pipe), and a dozing flag per side."""

    def __init__(self, words: np.ndarray, conn: Any, spin_seconds: float):
        self.words, self.conn, self.spin_seconds = words, conn, spin_seconds

    def wake(self, dozing: int) -> None:
        """Send a wake-up if the other side dozes on the pipe."""
        if self.words[dozing]:
            self.conn.send(_WAKE)

    def wait(self, word: int, target: int, dozing: int, idle: Callable[[], None]) -> Any:
        """Until words[word] == target (returns _REACHED) or a pipe message comes (returns
        it): spin `spin_seconds`, calling `idle`, then block on the pipe, words[dozing] up."""
        words, conn = self.words, self.conn
        deadline = time.perf_counter() + self.spin_seconds
        while time.perf_counter() < deadline:
            if words[word] == target:
                return _REACHED
            if conn.poll(0) and (message := conn.recv()) != _WAKE:
                return message
            idle()
        words[dozing] = 1
        try:
            while words[word] != target:
                if conn.poll(DOZE_SECONDS) and (message := conn.recv()) != _WAKE:
                    return message
            return _REACHED
        finally:
            words[dozing] = 0

    def recv(self) -> Any:
        """The next pipe message that is not a stale wake-up."""
        while (message := self.conn.recv()) == _WAKE:
            pass
        return message


class _Block:
    """Envs block.start..block.stop-1 over the shared arrays; one method per command."""

    def __init__(
        self,
        block: slice,
        seeds: list[int],
        shared: tuple,
        configs,
        config_indices,
        busy_words: list[tuple[np.ndarray, int]],
        prepare_when_idle: bool = False,
    ):
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
        self.busy_words = busy_words
        self.prepare_when_idle = prepare_when_idle
        self.reset_ns = 0.0  # running means of a reset that generates its world,
        self.prepare_ns = 0.0  # and of generating a world ahead
        self.cursor = 0

    def reset_env(self, i: int) -> None:
        self.obs[i], _ = self.envs[i].reset()
        self.returns[i], self.lengths[i] = 0.0, 0

    def reset_ended(self, i: int) -> None:
        """Auto-reset env i; one that must generate its world is announced as busy time."""
        if not self.busy_words or self.envs[i].next_world_ready:
            self.reset_env(i)
            return
        start = time.perf_counter_ns()
        self._announce(start + int(self.reset_ns) if self.reset_ns else 0)
        self.reset_env(i)
        self.reset_ns = _running_mean(self.reset_ns, time.perf_counter_ns() - start)
        self._announce(0)

    def use_idle_time(self, others_busy: list[tuple[np.ndarray, int]]) -> None:
        """While another block generates a world for longer than it takes us, generate the
        next world of one of ours: lock-step waits for the slowest block, and world
        generation is most of a reset. With `prepare_when_idle` (a worker beside a GPU
        policy step, idle between steps) generate one whenever idle. A world depends only
        on seed, episode and config, so neither changes any number."""
        if self.prepare_when_idle:
            self._prepare_one()
            return
        cost = self.prepare_ns or self.reset_ns
        now = time.perf_counter_ns()
        if cost and any(words[k] - now > cost for words, k in others_busy):
            self._prepare_one()

    def _prepare_one(self) -> None:
        """Generate the next world of the first env, from the cursor on, lacking one."""
        for _ in self.indices:
            i = self.indices[self.cursor]
            self.cursor = (self.cursor + 1) % len(self.indices)
            start = time.perf_counter_ns()
            if self.envs[i].prepare_next_world():
                self.prepare_ns = _running_mean(self.prepare_ns, time.perf_counter_ns() - start)
                return

    def _announce(self, busy_until_ns: int) -> None:
        for words, k in self.busy_words:
            words[k] = busy_until_ns

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
            cut = sum(1 for i in self.indices if self.lengths[i] > 0)
            for i in self.indices:
                self.config_of[i] = new_indices[i]
                self.envs[i].set_config(new_configs[new_indices[i]])
                self.reset_env(i)
            return cut
        if command == "get_state":
            return {
                i: {
                    "env": snapshot.capture(self.envs[i]),
                    "config_index": self.config_of[i],
                    "return": self.returns[i],
                    "length": self.lengths[i],
                }
                for i in self.indices
            }
        if command == "set_state":
            for i in self.indices:
                saved = data[i]
                env = snapshot.restore(saved["env"])
                config_index, ret, length = saved["config_index"], saved["return"], saved["length"]
                if (type(config_index), type(ret), type(length)) != (int, float, int):
                    raise ValueError("env state: malformed config_index, return or length")
                self.envs[i] = env
                self.config_of[i], self.returns[i], self.lengths[i] = config_index, ret, length
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
                self.reset_ended(i)
            else:
                self.obs[i] = ob
        return episodes


def workers_variable() -> int | None:
    """`$ENVGEN_ENV_WORKERS` as a count, None when unset; any other value is a `ConfigError` (the
    CLIs call this before any work, so a typo is one line). It sets the worker count of a Crafter
    run that names none, for a machine whose cores other jobs hold (a test suite on two workers):
    there a worker waits for a core at every lock step, and fewer processes are faster
    (docs/crafter.md, "Vector env"). It changes no number."""
    value = os.environ.get(WORKERS_VARIABLE, "").strip()
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ConfigError(WORKERS_VARIABLE, f"must be a whole number >= 1, got {value!r}")
    return int(value)


def default_num_workers(num_envs: int) -> int:
    """Worker processes when the caller names none: `$ENVGEN_ENV_WORKERS` if set, else one
    per core; at most `num_envs`."""
    count = workers_variable()
    return min(num_envs, count if count is not None else usable_cores())


def usable_cores() -> int:
    """The cores this process may run on (Linux: its affinity mask), else all of them."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _running_mean(mean: float, value: float) -> float:
    return value if not mean else 0.8 * mean + 0.2 * value


def _worker(conn, control, block_args, prepare) -> None:
    """A worker process: run one `_Block` until told to close."""
    # Its parent is the forkserver, which ends when the vector env's process does.
    die_with_parent()
    control_raw, k, spin = control
    link = _Link(np.frombuffer(control_raw, np.int64).reshape(-1, _WORDS)[k], conn, spin)
    envs = _Block(*block_args, [(link.words, _WORKER_BUSY)], prepare)
    # EOF or a broken pipe: the parent is gone (killed), nobody to answer, no traceback to print
    with contextlib.suppress(EOFError, BrokenPipeError, ConnectionResetError):
        _serve(link, envs, conn)
    conn.close()


def _serve(link: _Link, envs: _Block, conn) -> None:
    """The worker's loop: step on the shared words, answer commands, until "close"."""
    parent_busy = [(link.words, _PARENT_BUSY)]
    steps = 0
    while True:
        message = link.wait(
            _COMMAND, steps + 1, _WORKER_DOZING, lambda: envs.use_idle_time(parent_busy)
        )
        if message is _REACHED:
            steps += 1
            try:
                reply = envs.step()
            except Exception as exc:  # report to the parent, which raises it
                reply = exc
            link.words[_MESSAGE] = bool(reply)
            if reply:
                conn.send(reply)
            link.words[_DONE] = steps
            link.wake(_PARENT_DOZING)
            continue
        command, data = message
        if command == "close":
            break
        try:
            conn.send(envs.handle(command, data))
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception as exc:
            conn.send(exc)
