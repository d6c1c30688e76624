"""Edits of a Heist level through its saved state, and the facts they are checked by.

Heist's generator (openai/procgen src/mazegen.cpp `generate_maze_with_doors`) chains the
colours: key 0 lies in the agent's region, key c lies behind door c-1 and the gem behind
the last door. So removing the *first* colours keeps the chain intact (the level plays
as if those doors were already open), and holding the first keys is exactly the state
after picking them up (heist.cpp `handle_agent_collision` erases the key and sets
`has_keys`). A colour's key, door and ring icon share `image_theme` = colour index.
"""

import numpy as np

from envgen.envs.heist.state import KEY, KEY_ON_RING, LOCKED_DOOR, PLAYER, WALL_OBJ, HeistState

MODE_IDS = {"easy": 0, "hard": 1}  # game.h DistributionMode
ALL_LEVELS = (0, 2**31 - 1)  # vecgame.cpp: the seed range when num_levels = 0


def maze_size(state: HeistState) -> int:
    """Side of the maze in cells: the extent of the open cells in the world grid."""
    open_cells = state.grid != WALL_OBJ
    rows, cols = np.flatnonzero(open_cells.any(axis=1)), np.flatnonzero(open_cells.any(axis=0))
    return int(max(rows[-1] - rows[0], cols[-1] - cols[0])) + 1


def colours(state: HeistState) -> int:
    """Key/door colours still locked: the doors standing (all of them at the start)."""
    return int(np.count_nonzero(state.entities["type"] == LOCKED_DOOR))


def keys_on_floor(state: HeistState) -> int:
    """Keys not yet picked up."""
    return int(np.count_nonzero(state.entities["type"] == KEY))


def key_or_door_within(state: HeistState, reach: float) -> bool:
    """Whether a key or door would touch the agent were the agent `reach` cells closer
    (heist.cpp collisions: |dx| < rx + rx' + margin and |dy| < ry + ry' + margin)."""
    ents = state.entities
    agent = ents[ents["type"] == PLAYER][0]
    near = np.isin(ents["type"], (KEY, LOCKED_DOOR))
    for axis, radius in (("x", "rx"), ("y", "ry")):
        gap = np.abs(ents[axis] - agent[axis]) - ents[radius] - agent[radius]
        near &= gap < ents["collision_margin"] + reach
    return bool(near.any())


def keep_colours(state: HeistState, keep: int) -> None:
    """Keep only the last `keep` colours of the chain, renumbered from 0: the first
    colours' keys, doors and ring icons are deleted, and so are colours the generator
    counted but found no fork for (no door; `num_keys` can exceed the doors)."""
    doors = colours(state)
    drop = doors - keep
    if drop < 0:
        raise ValueError(f"keep: the level has {doors} colours, cannot keep {keep}")
    ents = state.entities
    coloured = np.isin(ents["type"], (KEY, LOCKED_DOOR, KEY_ON_RING))
    theme = ents["image_theme"]
    ents = ents[~(coloured & ((theme < drop) | (theme >= doors)))]
    ents["image_theme"][np.isin(ents["type"], (KEY, LOCKED_DOOR, KEY_ON_RING))] -= drop
    state.entities = ents
    state.num_keys = keep
    state.has_keys = state.has_keys[drop:doors]


def hold_keys(state: HeistState, count: int) -> None:
    """Give the agent the keys of the first `count` colours, as if it had picked them up."""
    count = min(count, colours(state))
    if count <= 0:
        return
    ents = state.entities
    state.entities = ents[~((ents["type"] == KEY) & (ents["image_theme"] < count))]
    state.has_keys = [True] * count + state.has_keys[count:]


def schedule_next_level(state: HeistState, mode: str, seeds: tuple[int, int]) -> None:
    """Make the engine's next reset generate a level of `mode` with a seed in [lo, hi):
    `Game::reset` (game.cpp) draws it from [level_seed_low, level_seed_high) and
    `HeistGame::choose_world_dim` reads the mode from the options, both in the state."""
    state.game.distribution_mode = MODE_IDS[mode]
    state.game.level_seed_low, state.game.level_seed_high = seeds
