"""procgen's batched Heist engine, with per-game state access that reuses one buffer.

`ProcgenGym3Env.callmethod("get_state")` copies every game through a new 1 MiB buffer;
Heist-EnvGen touches one game at a time at episode boundaries, so it calls procgen's C
`get_state`/`set_state` (vecgame.cpp) directly. `set_state` re-renders that game's
observation, so `observe` hands out views of gym3's buffers and the caller copies once,
after its edits, instead of gym3 copying every frame twice.
"""

import numpy as np

from envgen.envs.heist.config import MODES
from envgen.envs.heist.state import MAX_STATE_BYTES

NUM_ACTIONS = 15  # procgen's full action space (ProcgenGym3Env.get_combos)
FORCE_RESET = -1  # an action of -1 makes the engine end the episode (game.cpp Game::step)


class Engine:
    """`num` Heist games stepped together by procgen's own threads."""

    def __init__(self, num: int, mode: str, seed: int, num_threads: int = 4):
        if mode not in MODES:
            raise ValueError(f"distribution mode {mode!r}: allowed values: {', '.join(MODES)}")
        # lazy: optional dependency (procgen): the game registry loads this module in every
        # job, and a Crafter-only machine need not have procgen (tests/test_lazy_imports.py)
        from procgen import ProcgenGym3Env

        self.num = num
        self.env = ProcgenGym3Env(
            num=num,
            env_name="heist",
            distribution_mode=mode,
            start_level=0,
            num_levels=0,
            rand_seed=seed,
            num_threads=num_threads,
        )
        self._buf = self.env._ffi.new(f"char[{MAX_STATE_BYTES}]")

    def act(self, actions: np.ndarray) -> None:
        self.env.act(np.asarray(actions, dtype=np.int32))

    def observe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Views (reward float32 (N,), rgb uint8 (N,64,64,3), first bool (N,)) of the
        engine's buffers: valid until the next `act` or `set_state`; copy what you keep."""
        self.env._c_lib.libenv_observe(self.env._c_env)
        return self.env._rew, self.env._ob["rgb"], self.env._first

    def get_state(self, index: int) -> bytes:
        size = self.env.call_c_func("get_state", index, self._buf, MAX_STATE_BYTES)
        return bytes(self.env._ffi.buffer(self._buf, size))

    def set_state(self, index: int, state: bytes) -> None:
        self.env.call_c_func("set_state", index, state, len(state))
