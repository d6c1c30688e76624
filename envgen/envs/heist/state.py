"""Byte-exact codec for procgen Heist's saved game state (`get_state` / `set_state`).

procgen 0.10.7 writes a game as little-endian 4-byte ints and floats, strings and
vectors prefixed by their length, in this order (openai/procgen, src/): `Game::serialize`
(game.cpp), then `BasicAbstractGame::serialize` (basic-abstract-game.cpp: the entity list
as fixed-size `Entity::serialize` records, more scalars, the grid from grid.h), then
`HeistGame::serialize` (games/heist.cpp), and `vecgame.cpp` appends the 0xCAFECAFE
trailer. The dataclasses below *are* the layout: fields in the C++ write order, each
field's type picking its encoding (int, float, bytes = length-prefixed string, RandGen).
`parse(serialise(s)) == s` and `serialise(parse(b)) == b` for every state the engine writes.
"""

import dataclasses
import itertools
import struct
from typing import Any

import numpy as np

SERIALIZE_VERSION = 0  # game.cpp
END_OF_BUFFER = 0xCAFECAFE  # vecgame.cpp trailer, read back as a signed int
MAX_STATE_BYTES = 2**20  # procgen.env.MAX_STATE_SIZE

# Entity types and object ids that Heist uses (games/heist.cpp, object-ids.h).
PLAYER = 0
LOCKED_DOOR = 1
KEY = 2
EXIT = 9  # the gem
KEY_ON_RING = 11  # the held-key icons drawn in the corner
WALL_OBJ = 51

# Entity::serialize, field by field (entity.cpp): 31 four-byte values, 124 bytes a record.
_ENTITY_FIELDS = (
    ("<f4", "x y vx vy rx ry"),
    ("<i4", "type image_type image_theme render_z will_erase collides_with_entities"),
    ("<f4", "collision_margin rotation vrot"),
    ("<i4", "is_reflected fire_time spawn_time life_time expire_time use_abs_coords"),
    ("<f4", "friction"),
    ("<i4", "smart_step avoids_collisions auto_erase"),
    ("<f4", "alpha health theta grow_rate alpha_decay climber_spawn_x"),
)
ENTITY_DTYPE = np.dtype([(name, code) for code, names in _ENTITY_FIELDS for name in names.split()])


@dataclasses.dataclass
class RandGen:
    """A `RandGen` (randgen.cpp): kept verbatim, never interpreted."""

    is_seeded: int  # Nonzero once seeded
    mt19937: bytes  # `std::mt19937` streamed as text (624 words and a position)


@dataclasses.dataclass
class GameFields:
    """`Game::serialize` (game.cpp), in write order."""

    version: int  # Must equal SERIALIZE_VERSION
    game_name: bytes  # b"heist"
    paint_vel_info: int  # Option: paint velocity info into the frame
    use_generated_assets: int  # Option: procedurally generated sprites (must be 0 to save state)
    use_monochrome_assets: int  # Option: single-colour sprites
    restrict_themes: int  # Option: one visual theme per asset
    use_backgrounds: int  # Option: draw background images
    center_agent: int  # Option: camera follows the agent
    debug_mode: int  # Option: procgen debug mode
    distribution_mode: int  # 0 easy, 1 hard, 10 memory
    use_sequential_levels: int  # Option: advance the level seed on completion instead of resetting
    use_easy_jump: int  # Option (coinrun_old only)
    plain_assets: int  # Option (coinrun_old only)
    physics_mode: int  # Option (coinrun_old only)
    grid_step: int  # Nonzero when the agent moves cell by cell
    level_seed_low: int  # Next level seed is drawn from [level_seed_low, level_seed_high)
    level_seed_high: int  # Exclusive upper bound of the level seed range
    game_type: int  # Option: game variant
    game_n: int  # Index of this game in its vector env
    level_seed_rand_gen: RandGen  # Draws the next level seed
    rand_gen: RandGen  # Seeded with the level seed; drives level generation and steps
    reward: float  # Reward of the last step
    done: int  # The last step ended an episode
    level_complete: int  # The last step completed the level (the gem was stolen)
    action: int  # Action of the next step; -1 forces a reset
    timeout: int  # Episode length limit in steps (1000)
    current_level_seed: int  # Seed of the level being played
    prev_level_seed: int  # Seed of the level of the previous step
    episodes_remaining: int  # Replays of the current seed left before a new seed is drawn
    episode_done: int  # Copy of `done` after sequential-level handling
    last_reward_timer: int  # Frames left to show the last reward
    last_reward: float  # Last nonzero reward
    default_action: int  # Action used by forced resets
    fixed_asset_seed: int  # Seed of the fixed asset set
    cur_time: int  # Steps taken in this episode
    is_waiting_for_step: int  # Threading flag; 0 whenever the state can be read


@dataclasses.dataclass
class BasicFields:
    """`BasicAbstractGame::serialize` scalars after the entity list, in write order."""

    use_procgen_background: int  # Draw a generated background
    background_index: int  # Which background image
    bg_tile_ratio: float  # Background tiling ratio
    bg_pct_x: float  # Background horizontal offset
    char_dim: float  # Sprite size of the agent
    last_move_action: int  # Last non-idle move action (0-8)
    move_action: int  # Move part of the last action (0-8)
    special_action: int  # Special part of the last action (0 = none)
    mixrate: float  # Velocity smoothing
    maxspeed: float  # Agent speed limit (0.75 in Heist)
    max_jump: float  # Jump strength (unused in Heist)
    action_vx: float  # Horizontal velocity asked by the last action
    action_vy: float  # Vertical velocity asked by the last action
    action_vrot: float  # Rotation asked by the last action
    center_x: float  # Camera centre x
    center_y: float  # Camera centre y
    random_agent_start: int  # Agent start drawn at random (0 in Heist: the maze places it)
    has_useful_vel_info: int  # Velocity matters for play (0 in Heist)
    step_rand_int: int  # Per-step random number
    asset_rand_gen: RandGen  # Drives asset choice
    main_width: int  # World width in cells
    main_height: int  # World height in cells
    out_of_bounds_object: int  # Object beyond the world's edge (WALL_OBJ in Heist)
    unit: float  # Pixels per cell
    view_dim: float  # Cells in view
    x_off: float  # Camera x offset in pixels
    y_off: float  # Camera y offset in pixels
    visibility: float  # Visible radius in cells
    min_visibility: float  # Lower bound on the visible radius


@dataclasses.dataclass
class HeistState:
    """One Heist game, parsed. Edit fields, then `serialise` it for `set_state`."""

    game: GameFields  # `Game` fields
    grid_size: int  # main_width * main_height
    entities: np.ndarray  # Structured array of ENTITY_DTYPE records, in the engine's order
    basic: BasicFields  # `BasicAbstractGame` scalars
    grid: np.ndarray  # Object ids, int32 array of shape (main_height, main_width); index [y, x]
    num_keys: int  # Key/door colours the level was generated with (0-3)
    world_dim: int  # Side of the square world in cells (9 easy, 13 hard)
    has_keys: list[bool]  # Per colour, whether the agent holds that key

    def of_type(self, entity_type: int) -> np.ndarray:
        """Indices of the entities of one type (e.g. KEY, LOCKED_DOOR)."""
        return np.flatnonzero(self.entities["type"] == entity_type)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, HeistState):
            return NotImplemented
        return serialise(self) == serialise(other)


# --- the codec, driven by the dataclass layouts above ------------------------------
_INT = struct.Struct("<i")
_UINT = struct.Struct("<I")
_FIXED = {int: "i", float: "f"}


def _plan(cls: type) -> list[tuple[Any, tuple[str, ...]]]:
    """Group a dataclass's fields into runs of fixed-size values (one Struct each). Reads
    `field.type` as a class, so this module must not use postponed annotations."""
    plan: list[tuple[Any, tuple[str, ...]]] = []
    for fixed, run in itertools.groupby(dataclasses.fields(cls), lambda f: f.type in _FIXED):
        run = list(run)
        if fixed:
            codes = "".join(_FIXED[field.type] for field in run)
            plan.append((struct.Struct("<" + codes), tuple(field.name for field in run)))
        else:
            plan += [(field.type, (field.name,)) for field in run]
    return plan


_GAME_PLAN = _plan(GameFields)
_BASIC_PLAN = _plan(BasicFields)


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def int(self) -> int:
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def bytes(self) -> bytes:
        size = self.int()
        if size < 0 or self.pos + size > len(self.data):
            raise ValueError(f"bad string length {size} at byte {self.pos - 4}")
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return value

    def array(self, dtype: np.dtype, count: int) -> np.ndarray:
        if count < 0 or self.pos + count * dtype.itemsize > len(self.data):
            raise ValueError(f"bad array length {count} at byte {self.pos - 4}")
        value = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos).copy()
        self.pos += count * dtype.itemsize
        return value

    def fields(self, cls: type, plan: list[tuple[Any, tuple[str, ...]]]) -> Any:
        values: dict[str, Any] = {}
        for kind, names in plan:
            if isinstance(kind, struct.Struct):
                values.update(zip(names, kind.unpack_from(self.data, self.pos), strict=True))
                self.pos += kind.size
            elif kind is bytes:
                values[names[0]] = self.bytes()
            else:
                values[names[0]] = RandGen(self.int(), self.bytes())
        return cls(**values)


def _write_fields(obj: Any, plan: list[tuple[Any, tuple[str, ...]]], out: list[bytes]) -> None:
    for kind, names in plan:
        if isinstance(kind, struct.Struct):
            out.append(kind.pack(*(getattr(obj, name) for name in names)))
        elif kind is bytes:
            value = getattr(obj, names[0])
            out += [_INT.pack(len(value)), value]
        else:
            rng = getattr(obj, names[0])
            out += [_INT.pack(rng.is_seeded), _INT.pack(len(rng.mt19937)), rng.mt19937]


def parse(data: bytes) -> HeistState:
    """Parse the bytes of `get_state` for one Heist game (ValueError if malformed)."""
    try:
        r = _Reader(data)
        game = r.fields(GameFields, _GAME_PLAN)
        if game.version != SERIALIZE_VERSION or game.game_name != b"heist":
            raise ValueError(f"not a Heist state (version {game.version}, {game.game_name!r})")
        grid_size = r.int()
        entities = r.array(ENTITY_DTYPE, r.int())
        basic = r.fields(BasicFields, _BASIC_PLAN)
        width, height = r.int(), r.int()
        cells = r.array(np.dtype("<i4"), r.int())
        num_keys, world_dim = r.int(), r.int()
        has_keys = [r.int() > 0 for _ in range(r.int())]
        (trailer,) = _UINT.unpack_from(data, r.pos)
        r.pos += 4
    except struct.error as exc:
        raise ValueError(f"truncated Heist state: {exc}") from None
    if trailer != END_OF_BUFFER or r.pos != len(data):
        raise ValueError("Heist state does not end with the 0xCAFECAFE trailer")
    if cells.size != width * height:
        raise ValueError(f"grid holds {cells.size} cells, expected {width}x{height}")
    return HeistState(
        game=game,
        grid_size=grid_size,
        entities=entities,
        basic=basic,
        grid=cells.reshape(height, width),
        num_keys=num_keys,
        world_dim=world_dim,
        has_keys=has_keys,
    )


def serialise(state: HeistState) -> bytes:
    """The bytes `set_state` expects; inverse of `parse`."""
    out: list[bytes] = []
    _write_fields(state.game, _GAME_PLAN, out)
    entities = np.ascontiguousarray(state.entities, dtype=ENTITY_DTYPE)
    out += [_INT.pack(state.grid_size), _INT.pack(len(entities)), entities.tobytes()]
    _write_fields(state.basic, _BASIC_PLAN, out)
    height, width = state.grid.shape
    cells = np.ascontiguousarray(state.grid, dtype="<i4")
    out += [struct.pack("<iii", width, height, cells.size), cells.tobytes()]
    out.append(struct.pack("<iii", state.num_keys, state.world_dim, len(state.has_keys)))
    out.append(struct.pack(f"<{len(state.has_keys)}i", *(int(k) for k in state.has_keys)))
    out.append(_UINT.pack(END_OF_BUFFER))
    return b"".join(out)
