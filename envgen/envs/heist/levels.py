"""The level bank: Heist level seeds characterised by maze size and colours, on disk.

A Heist level is a pure function of (distribution mode, level seed) (game.cpp
`Game::reset`), and procgen has no parameter for maze size or key count, so a config
asking for them draws from seeds whose level has them. `scan` lets the real engine
generate each seed; the bytes (one per seed) depend only on procgen's generator, are
cached beside this module as `levels_{mode}.npy` and rebuilt by `build_bank` if missing.
"""

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from envgen.envs.heist import edits
from envgen.envs.heist.engine import FORCE_RESET, Engine
from envgen.envs.heist.state import HeistState, parse, serialise

BANK_SEEDS = 16384  # seeds 0 .. BANK_SEEDS-1 per mode: about 2700 levels per (size, colours)
BANK_DIR = Path(__file__).parent


def generate(mode: str, seeds: np.ndarray, batch: int = 64) -> Iterator[HeistState]:
    """The freshly generated level of each seed, in order, made by the engine itself."""
    seeds = np.asarray(seeds, dtype=np.int64)
    num = max(1, min(batch, len(seeds)))
    engine = Engine(num, mode, seed=0)
    for start in range(0, len(seeds), num):
        chunk = seeds[start : start + num]
        for i, seed in enumerate(chunk):
            state = parse(engine.get_state(i))
            edits.schedule_next_level(state, mode, (int(seed), int(seed) + 1))
            engine.set_state(i, serialise(state))
        engine.act(np.full(num, FORCE_RESET))
        for i, seed in enumerate(chunk):
            state = parse(engine.get_state(i))
            if state.game.current_level_seed != seed or state.game.cur_time != 0:
                raise RuntimeError(f"procgen did not generate level seed {seed} on request")
            yield state


def scan(mode: str, seeds: np.ndarray) -> np.ndarray:
    """uint8 code of each seed's level: maze_size * 4 + colours."""
    codes = (edits.maze_size(s) * 4 + edits.colours(s) for s in generate(mode, seeds))
    return np.fromiter(codes, dtype=np.uint8, count=len(seeds))


def build_bank(mode: str, size: int = BANK_SEEDS) -> np.ndarray:
    """Scan seeds 0..size-1 and write `levels_{mode}.npy`; returns the codes."""
    codes = scan(mode, np.arange(size))
    np.save(BANK_DIR / f"levels_{mode}.npy", codes)
    return codes


class LevelBank:
    """Seed codes per mode, loaded (or built) once, queried per config."""

    def __init__(self) -> None:
        self._codes: dict[str, np.ndarray] = {}

    def codes(self, mode: str) -> np.ndarray:
        if mode not in self._codes:
            path = BANK_DIR / f"levels_{mode}.npy"
            self._codes[mode] = np.load(path) if path.exists() else build_bank(mode)
        return self._codes[mode]

    def seeds(self, mode: str, maze_size: int | None, min_colours: int | None) -> np.ndarray:
        """Bank seeds of `mode` with this maze size and at least `min_colours` (None: any)."""
        codes = self.codes(mode)
        match = np.ones(len(codes), dtype=bool)
        if maze_size is not None:
            match &= codes // 4 == maze_size
        if min_colours is not None:
            match &= codes % 4 >= min_colours
        return np.flatnonzero(match)
