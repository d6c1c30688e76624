"""Heist-EnvGen: procgen's own batched Heist, with each episode's level chosen and edited.

The engine steps all games in its threads as plain procgen does. Python touches a game
only when an episode starts (inside the step that ends the last, game.cpp `Game::step`):
it edits the new level's state (colours removed, keys held), schedules the next episode's
mode and level seed (from the level bank when the config asks for a maze size or colours)
and writes the state back. An episode ends when the gem is stolen (terminated, reward 10)
or at procgen's 1000-step timeout (truncated); that step returns the next episode's first
observation. A stolen gem implies every key taken and door opened (the colour chain, see
`edits`); a timed-out episode's last step is replayed on a one-game scratch engine that
does not reset, to read its final state (skipped when no key or door is within reach).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from envgen.envs.heist import edits
from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.engine import FORCE_RESET, NUM_ACTIONS, Engine
from envgen.envs.heist.levels import LevelBank
from envgen.envs.heist.state import HeistState, parse, serialise
from envgen.envs.mixture import StepResult, assign_configs
from envgen.envs.plain import config_from_plain, config_to_plain

OBS_SHAPE = (64, 64, 3)
REACH = 2.0  # cells: more than the agent moves in one step (speed 0.75, heist.cpp)


class HeistVecEnv:
    """`num_envs` Heist games with auto-reset and `CrafterVecEnv`'s API and config spread:
    game i plays levels of config `config_indices[i]`. At an episode's end
    infos[i]["episode"] holds return, length, success, keys_collected, keys_total,
    doors_opened, doors_total, config_index, level_seed and maze_size."""

    num_actions = NUM_ACTIONS
    observation_shape = OBS_SHAPE

    def __init__(
        self,
        configs: Sequence[HeistConfig],
        num_envs: int,
        seed: int,
        weights: Sequence[float] | None = None,
        num_threads: int = 4,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs: expected at least 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self._assign(configs, weights)
        self._seed = seed
        self._engine = Engine(self.num_envs, "easy", seed=seed, num_threads=num_threads)
        self._scratch: Engine | None = None
        self._bank = LevelBank()
        self._rng = np.random.default_rng(seed)
        self._pools: dict[tuple[str, int | None, int | None], np.ndarray] = {}
        self._obs = np.zeros((self.num_envs, *OBS_SHAPE), dtype=np.uint8)
        self._started = False
        self._closed = False
        self._level_seed = np.zeros(self.num_envs, dtype=np.int64)
        self._length = np.zeros(self.num_envs, dtype=np.int64)
        self._return = np.zeros(self.num_envs, dtype=np.float64)
        self._keys_total = np.zeros(self.num_envs, dtype=np.int64)
        self._doors_total = np.zeros(self.num_envs, dtype=np.int64)
        self._timeout = np.zeros(self.num_envs, dtype=np.int64)
        self._maze_size = np.zeros(self.num_envs, dtype=np.int64)

    def reset(self) -> np.ndarray:
        """Start a new episode in every game; returns obs uint8 (N, 64, 64, 3)."""
        for i in range(self.num_envs):
            state = parse(self._engine.get_state(i))
            self._schedule_next(i, state)
            self._engine.set_state(i, serialise(state))
        self._engine.act(np.full(self.num_envs, FORCE_RESET))
        for i in range(self.num_envs):
            self._begin(i)
        self._started = True
        self._obs = self._engine.observe()[1].copy()
        return self._obs.copy()

    @property
    def last_obs(self) -> np.ndarray:
        """The latest observations (after `reset`, `step` or `set_mixture`)."""
        return self._obs.copy()

    def step(self, actions: Any) -> StepResult:
        """Step every game (`StepResult`)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        n, shape = self.num_envs, actions.shape
        if shape != (n,) or not np.all((actions >= 0) & (actions < NUM_ACTIONS)):
            raise ValueError(
                f"actions: expected {n} integers in [0, {NUM_ACTIONS}), got shape {shape}"
            )
        counted = (self._keys_total + self._doors_total) > 0  # else nothing to count at the end
        finals = {
            int(i): self._final_state(int(i), int(actions[i]))
            for i in np.flatnonzero((self._length + 1 >= self._timeout) & counted)
        }
        self._engine.act(actions)
        reward, obs, first = self._engine.observe()
        reward, first = reward.copy(), first.copy()
        self._length += 1
        self._return += reward
        terminated = first & (reward > 0)
        truncated = first & ~terminated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(first):
            infos[i]["episode"] = self._episode_info(i, bool(terminated[i]), finals.get(i))
            self._begin(i)
        self._obs = obs.copy()
        return self._obs.copy(), reward, terminated, truncated, infos

    def set_mixture(
        self, configs: Sequence[HeistConfig], weights: Sequence[float] | None = None
    ) -> int:
        """Switch to a new config mixture, as `CrafterVecEnv.set_mixture` does: every game
        resets into its new config at once; returns the running episodes it ended unlogged."""
        cut = int(np.count_nonzero(self._length > 0)) if self._started else 0
        self._assign(configs, weights)
        self.reset()
        return cut

    _TRACKED = ("_level_seed", "_length", "_return", "_keys_total", "_doors_total", "_timeout")

    def get_state(self) -> dict[str, Any]:
        """Every game's engine state, this wrapper's per-game counters, level RNG and
        observations: `set_state` on a vec env built alike continues exactly. Plain data
        only (engine states are procgen's bytes): a checkpoint stores it unpickled."""
        if not self._started:
            raise RuntimeError("call reset() before get_state()")
        return {
            "configs": [config_to_plain(c) for c in self.configs],
            "config_indices": list(self.config_indices),
            "games": [self._engine.get_state(i) for i in range(self.num_envs)],
            "rng": self._rng.bit_generator.state,
            "obs": self._obs.copy(),
            **{name: getattr(self, name).copy() for name in (*self._TRACKED, "_maze_size")},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore `get_state`'s snapshot (same num_envs and seed), each game's bytes parsed
        first; ValueError (or KeyError, TypeError) when it is malformed."""
        if (count := len(state["games"])) != self.num_envs:
            raise ValueError(f"state of {count} games given to a vec env of {self.num_envs}")
        configs = [config_from_plain(c) for c in state["configs"]]
        indices = list(state["config_indices"])
        if len(indices) != self.num_envs or not all(
            type(k) is int and 0 <= k < len(configs) for k in indices
        ):
            raise ValueError("config_indices: expected one index into configs per game")
        arrays = {}
        for name in (*self._TRACKED, "_maze_size", "_obs"):
            ours, value = getattr(self, name), state["obs" if name == "_obs" else name]
            if not isinstance(value, np.ndarray) or value.dtype != ours.dtype:
                raise ValueError(f"{name}: expected a {ours.dtype} array")
            if value.shape != ours.shape:
                raise ValueError(f"{name}: expected shape {ours.shape}")
            arrays[name] = value.copy()
        games = list(state["games"])
        if not all(isinstance(data, bytes) for data in games):
            raise ValueError("games: expected procgen state bytes per game")
        for data in games:
            parse(data)  # ValueError if malformed
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng"]
        self.configs, self.config_indices = configs, indices
        for i, data in enumerate(games):
            self._engine.set_state(i, data)
        self._rng = rng
        for name, value in arrays.items():
            setattr(self, name, value)
        self._started = True

    def state(self, i: int) -> HeistState:
        """The parsed current state of game i (a copy: editing it changes nothing)."""
        return parse(self._engine.get_state(i))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._engine.env.close()
        if self._scratch is not None:
            self._scratch.env.close()

    def __enter__(self) -> HeistVecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _assign(self, configs: Sequence[HeistConfig], weights: Sequence[float] | None) -> None:
        configs = list(configs)
        if not configs or not all(isinstance(c, HeistConfig) for c in configs):
            raise ValueError("configs: expected a non-empty sequence of HeistConfig")
        self.config_indices = assign_configs(len(configs), self.num_envs, weights)
        self.configs = configs

    def _begin(self, i: int) -> None:
        """Edit the level game i has just generated, and schedule its next one."""
        data = self._engine.get_state(i)
        state = parse(data)
        config = self.configs[self.config_indices[i]]
        if config.num_keys is not None:
            edits.keep_colours(state, config.num_keys)
        edits.hold_keys(state, config.keys_held)
        self._keys_total[i] = edits.keys_on_floor(state)
        self._doors_total[i] = edits.colours(state)
        self._timeout[i] = state.game.timeout
        self._level_seed[i] = state.game.current_level_seed
        self._maze_size[i] = edits.maze_size(state)
        self._length[i] = 0
        self._return[i] = 0.0
        self._schedule_next(i, state)
        edited = serialise(state)
        if edited != data:  # plain levels with a plain next level need no write
            self._engine.set_state(i, edited)

    def _schedule_next(self, i: int, state: HeistState) -> None:
        """Draw game i's next level (a bank seed if its config asks for size or colours)."""
        config = self.configs[self.config_indices[i]]
        seeds = edits.ALL_LEVELS
        if config.constrains_level:
            pool = self._pool(config)
            seed = int(pool[self._rng.integers(len(pool))])
            seeds = (seed, seed + 1)
        edits.schedule_next_level(state, config.distribution_mode, seeds)

    def _pool(self, config: HeistConfig) -> np.ndarray:
        key = (config.distribution_mode, config.maze_size, config.num_keys)
        if key not in self._pools:
            self._pools[key] = self._bank.seeds(*key)
        return self._pools[key]

    def _final_state(self, i: int, action: int) -> HeistState:
        """Game i's keys and doors after its final step, about to be taken with `action`."""
        state = parse(self._engine.get_state(i))
        if not edits.key_or_door_within(state, REACH):
            return state
        if self._scratch is None:
            self._scratch = Engine(1, "easy", seed=self._seed, num_threads=0)
        state.game.timeout += 1  # the scratch game must not reset after the step
        self._scratch.set_state(0, serialise(state))
        self._scratch.act(np.array([action]))
        return parse(self._scratch.get_state(0))

    def _episode_info(self, i: int, success: bool, final: HeistState | None) -> dict[str, Any]:
        keys, doors = int(self._keys_total[i]), int(self._doors_total[i])
        if not success and keys + doors > 0:
            if final is None:
                raise RuntimeError(f"game {i} ended without the gem before its timeout")
            keys -= edits.keys_on_floor(final)
            doors -= edits.colours(final)
        return {
            "return": float(self._return[i]),
            "length": int(self._length[i]),
            "success": success,
            "keys_collected": keys,
            "keys_total": int(self._keys_total[i]),
            "doors_opened": doors,
            "doors_total": int(self._doors_total[i]),
            "config_index": int(self.config_indices[i]),
            "level_seed": int(self._level_seed[i]),
            "maze_size": int(self._maze_size[i]),
        }


class HeistEnv:
    """One Heist-EnvGen game (config None = plain easy Heist), gymnasium-like."""

    def __init__(self, config: HeistConfig | None = None, seed: int = 0):
        config = config if config is not None else HeistConfig()
        self._vec = HeistVecEnv((config,), 1, seed=seed, num_threads=0)

    def reset(self) -> np.ndarray:
        """Observation uint8 (64, 64, 3) of a fresh episode."""
        return self._vec.reset()[0]

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, infos = self._vec.step(np.array([action]))
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), infos[0]

    def close(self) -> None:
        self._vec.close()


THREADS = 4  # procgen threads of a training vec env when `num_threads` is None


def vec_env_factory(num_threads: int | None = None) -> Callable[..., HeistVecEnv]:
    """The trainer's factory (`envgen.agents.trainer.EnvFactory`): `HeistVecEnv` stepped by
    `num_threads` procgen threads (None: THREADS), which never changes results."""

    def make(configs, num_envs, seed, weights):
        threads = THREADS if num_threads is None else num_threads
        return HeistVecEnv(configs, num_envs, seed, weights=weights, num_threads=threads)

    return make
