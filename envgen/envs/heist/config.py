"""`HeistConfig`: what an LLM may set in a Heist level, validated in one place.

The paper does not say which Heist parameters its LLM controlled (docs/paper.md, "What the paper
does not say"). This project exposes what procgen's Heist generator varies and what matters for the
three skills (find keys, open doors in order, reach the gem): the distribution mode, maze size,
number of key/door colours and keys held at the start, in the engine's ranges (openai/procgen
games/heist.cpp; `MAX_MAZE`, `max_colours`). The defaults are plain easy Heist; docs/heist.md gives
the design and its reasons. `HeistConfig.from_dict` keeps `CrafterConfig.from_dict`'s contract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from envgen.envs.validation import as_mapping, int_clamped, join_path, json_object, norm_key, one_of
from envgen.errors import ConfigError

MODES = ("easy", "hard")
MIN_MAZE = 5  # heist.cpp: min_maze_dim
MAX_MAZE = {"easy": 9, "hard": 13}  # heist.cpp choose_world_dim: world_dim per mode
MAX_COLOURS = 3  # heist.cpp caps num_keys at 3 (blue, green, red)
RANDOM = "random"  # the engine's own draw for that field

_MODE_ALIASES = {"default": "easy", "normal": "easy", "difficult": "hard"}
_RANDOM_WORDS = ("random", "any", "default", "none", "null", "")
_ENV_KEYS = {
    "distribution_mode": ("distribution_mode", "mode", "difficulty_mode"),
    "maze_size": ("maze_size", "maze_dim", "maze_dimension", "size"),
    "num_keys": tuple(
        "num_keys keys number_of_keys key_count num_doors num_colors num_colours".split()
    ),
}
_INVENTORY_KEYS = {"keys_held": ("keys_held", "held_keys", "starting_keys", "start_keys")}
_TOP_KEYS = ("environment_settings", "inventory_settings", "purpose")


def max_colours(maze_size: int) -> int:
    """Most key/door colours heist.cpp generates in a maze of this size."""
    return min(MAX_COLOURS, (maze_size - MIN_MAZE) // 2 + 1)


@dataclasses.dataclass(frozen=True)
class HeistConfig:
    """One Heist level design. Frozen: hashable and safe to share across workers."""

    distribution_mode: str = "easy"
    """procgen distribution mode: "easy" (9x9 world) or "hard" (13x13 world)."""
    maze_size: int | None = None
    """Maze side in cells (odd, 5 to 9 easy, 5 to 13 hard); None = the engine's draw."""
    num_keys: int | None = None
    """Key/door colour pairs in the level (0-3); None = what the level was generated with."""
    keys_held: int = 0
    """Keys the agent holds at the start, first in the door chain; clamped per level."""
    purpose: str = ""
    """The LLM's stated purpose for this environment; informational only."""
    warnings: list[str] = dataclasses.field(default_factory=list, compare=False, hash=False)
    """What validation clamped or adjusted; not part of the config's identity."""

    def __post_init__(self) -> None:
        """Reject out-of-range values from code that builds a config directly."""
        if self.distribution_mode not in MODES:
            raise ConfigError("distribution_mode", f"allowed values: {', '.join(MODES)}")
        size, top = self.maze_size, MAX_MAZE[self.distribution_mode]
        if size is not None and (size % 2 == 0 or not MIN_MAZE <= size <= top):
            raise ConfigError("maze_size", f"expected an odd size in [{MIN_MAZE}, {top}] or None")
        colours = MAX_COLOURS if self.maze_size is None else max_colours(self.maze_size)
        if self.num_keys is not None and not 0 <= self.num_keys <= colours:
            raise ConfigError("num_keys", f"expected an integer in [0, {colours}] or None")
        held = colours if self.num_keys is None else self.num_keys
        if not 0 <= self.keys_held <= held:
            raise ConfigError("keys_held", f"expected an integer in [0, {held}]")

    @property
    def is_stock(self) -> bool:
        """True when levels are plain procgen Heist of this mode, unedited."""
        return self.maze_size is None and self.num_keys is None and self.keys_held == 0

    @property
    def constrains_level(self) -> bool:
        """True when the level seed must come from the level bank (size or colours asked)."""
        return self.maze_size is not None or self.num_keys is not None

    def to_dict(self) -> dict[str, Any]:
        """The nested JSON layout; `from_dict(to_dict())` round-trips."""
        out: dict[str, Any] = {
            "environment_settings": {
                "distribution_mode": self.distribution_mode,
                "maze_size": RANDOM if self.maze_size is None else self.maze_size,
                "num_keys": RANDOM if self.num_keys is None else self.num_keys,
            },
            "inventory_settings": {"keys_held": self.keys_held},
        }
        if self.purpose:
            out["purpose"] = self.purpose
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str = "") -> HeistConfig:
        """Validate untrusted input, the nested layout of `to_dict` or a flat mapping of the
        same keys, into a config; `path` prefixes field paths in errors and warnings."""
        data = json_object(data, path)
        fields: dict[str, tuple[Any, str]] = {}
        purpose = ""
        for key, value in data.items():
            norm = norm_key(key)
            where = join_path(path, str(key))
            if norm in ("environment_settings", "inventory_settings"):
                section = _ENV_KEYS if norm == "environment_settings" else _INVENTORY_KEYS
                for sub_key, sub_value in as_mapping(value, where).items():
                    sub_where = join_path(where, str(sub_key))
                    fields[_field_name(sub_key, section, sub_where, ())] = (sub_value, sub_where)
            elif norm == "purpose":
                purpose = str(value)[:500]
            else:
                flat = {**_ENV_KEYS, **_INVENTORY_KEYS}
                fields[_field_name(key, flat, where, _TOP_KEYS)] = (value, where)

        warnings: list[str] = []
        mode = "easy"
        if "distribution_mode" in fields:
            value, where = fields["distribution_mode"]
            mode = one_of(value, MODES, _MODE_ALIASES, where)
        maze_size = None
        if "maze_size" in fields:
            maze_size = _maze_size(*fields["maze_size"], mode, warnings)
        num_keys = None
        if "num_keys" in fields:
            top = MAX_COLOURS if maze_size is None else max_colours(maze_size)
            num_keys = _optional_int(*fields["num_keys"], 0, top, warnings)
        keys_held = 0
        if "keys_held" in fields:
            value, where = fields["keys_held"]
            top = MAX_COLOURS if num_keys is None else num_keys
            if isinstance(value, str) and norm_key(value) == "all":
                keys_held = top
            else:
                keys_held = _optional_int(value, where, 0, top, warnings) or 0
        return cls(
            distribution_mode=mode,
            maze_size=maze_size,
            num_keys=num_keys,
            keys_held=keys_held,
            purpose=purpose,
            warnings=warnings,
        )


def _field_name(
    key: Any, section: Mapping[str, tuple[str, ...]], where: str, also: tuple[str, ...]
) -> str:
    """The canonical field a key (or an LLM spelling of it) names; `also` lists other keys."""
    norm = norm_key(key)
    for name, spellings in section.items():
        if norm in spellings:
            return name
    raise ConfigError(where, f"unknown key; allowed keys: {', '.join((*also, *section))}")


def _optional_int(value: Any, where: str, lo: int, hi: int, warnings: list[str]) -> int | None:
    """None for "random"-like input, else an int clamped to [lo, hi] (clamping recorded)."""
    if value is None or (isinstance(value, str) and norm_key(value) in _RANDOM_WORDS):
        return None
    return int_clamped(value, lo, hi, where, warnings)


def _maze_size(value: Any, where: str, mode: str, warnings: list[str]) -> int | None:
    """Odd maze side in [5, MAX_MAZE[mode]]; "9x9" spellings accepted, even sizes lowered."""
    if isinstance(value, str) and "x" in value.lower():
        value = value.lower().split("x")[0]
    size = _optional_int(value, where, MIN_MAZE, MAX_MAZE[mode], warnings)
    if size is not None and size % 2 == 0:
        warnings.append(f"{where}: {size} is even; mazes have odd sides, lowered to {size - 1}")
        size -= 1
    return size
