"""The level bank agrees with the engine, and Heist's colour chain survives the edits."""

from collections import deque

import numpy as np
import pytest

from envgen.envs.heist import edits
from envgen.envs.heist.config import MAX_MAZE, MIN_MAZE, max_colours
from envgen.envs.heist.levels import BANK_SEEDS, LevelBank, generate, scan
from envgen.envs.heist.state import EXIT, KEY, LOCKED_DOOR, PLAYER, WALL_OBJ, HeistState

BANK = LevelBank()


@pytest.mark.parametrize("mode", ["easy", "hard"])
def test_cached_bank_matches_a_fresh_scan(mode):
    codes = BANK.codes(mode)
    assert codes.shape == (BANK_SEEDS,) and codes.dtype == np.uint8
    sample = np.random.default_rng(0).choice(BANK_SEEDS, size=96, replace=False)
    assert np.array_equal(scan(mode, sample), codes[sample])


@pytest.mark.parametrize("mode", ["easy", "hard"])
def test_every_promised_size_and_colour_count_has_levels(mode):
    for size in range(MIN_MAZE, MAX_MAZE[mode] + 1, 2):
        for colours in range(max_colours(size) + 1):
            assert len(BANK.seeds(mode, size, colours)) >= 500, (size, colours)
    sizes = set((BANK.codes(mode) // 4).tolist())
    assert sizes == set(range(MIN_MAZE, MAX_MAZE[mode] + 1, 2))


def _cell(state: HeistState, index: int) -> tuple[int, int]:
    ent = state.entities[index]
    return int(ent["y"]), int(ent["x"])


def _reachable(state: HeistState, open_doors: int) -> set[tuple[int, int]]:
    """Cells the agent can walk to when doors of colour < open_doors are open."""
    blocked = {
        _cell(state, i)
        for i in state.of_type(LOCKED_DOOR)
        if state.entities[i]["image_theme"] >= open_doors
    }
    start = _cell(state, state.of_type(PLAYER)[0])
    seen, todo = {start}, deque([start])
    height, width = state.grid.shape
    while todo:
        y, x = todo.popleft()
        for nxt in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
            if (
                0 <= nxt[0] < height
                and 0 <= nxt[1] < width
                and nxt not in seen
                and nxt not in blocked
                and state.grid[nxt] != WALL_OBJ
            ):
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _assert_chain(state: HeistState) -> None:
    """Key c needs doors < c open and no fewer; the gem needs every door open."""
    n = edits.colours(state)
    keys = {int(state.entities[i]["image_theme"]): _cell(state, i) for i in state.of_type(KEY)}
    assert sorted(keys) == list(range(n))
    gem = _cell(state, state.of_type(EXIT)[0])
    for c in range(n):
        assert keys[c] in _reachable(state, c)
        if c > 0:
            assert keys[c] not in _reachable(state, c - 1)
    assert gem in _reachable(state, n)
    if n > 0:
        assert gem not in _reachable(state, n - 1)


@pytest.mark.parametrize("mode", ["easy", "hard"])
def test_colour_chain_holds_and_survives_removing_first_colours(mode):
    seeds = BANK.seeds(mode, None, 2)[:40]
    for state in generate(mode, seeds):
        _assert_chain(state)
        edits.keep_colours(state, edits.colours(state) - 1)
        _assert_chain(state)
