"""`CrafterConfig`: what an LLM may set in a Crafter world, validated in one place.

The parameters, their allowed values and the spawn thresholds are the ones of the
EnvGen authors' prompt and modified Crafter (docs/paper.md, "Crafter parameters the LLM
controls"). Every default reproduces stock Crafter (`SPAWN_THRESHOLDS`, `STOCK_LENGTH`).
`CrafterConfig.from_dict` is the only way untrusted input (an LLM reply, a JSON file)
becomes a config: unknown keys and bad enums raise `ConfigError` naming the field path
and the allowed values; numbers out of range are clamped and recorded in `.warnings`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from envgen.envs.validation import as_mapping, int_clamped, join_path, json_object, norm_key, one_of
from envgen.errors import ConfigError

BIOMES = ("natural", "grassland", "mountain", "beaches")
RARITIES = ("very_common", "common", "rare")

# Spawn thresholds per rarity (the authors' modified worldgen): a tile becomes the resource
# when uniform() > threshold. "common" (and "rare" for diamond) are stock Crafter's.
SPAWN_THRESHOLDS: dict[str, dict[str, float]] = {
    "coal": {"rare": 0.95, "common": 0.85, "very_common": 0.75},
    "iron": {"rare": 0.85, "common": 0.75, "very_common": 0.65},
    "tree": {"rare": 0.9, "common": 0.8, "very_common": 0.7},
    "diamond": {"rare": 0.994, "common": 0.9, "very_common": 0.85},
}

# Starting inventory the LLM may set, with its inclusive maximum (minimum 0).
MATERIAL_ITEMS = ("sapling", "wood", "stone", "coal", "iron", "diamond")
TOOL_ITEMS = tuple(
    f"{m}_{tool}" for tool in ("pickaxe", "sword") for m in ("wood", "stone", "iron")
)
INVENTORY_MAX: dict[str, int] = {**{k: 9 for k in MATERIAL_ITEMS}, **{k: 1 for k in TOOL_ITEMS}}

# The authors' loader (aszala/EnvGen env_loader.py) gives a tool for every starting item
# whose *name contains* a material: "stone", "stone_pickaxe" and "stone_sword" all give a
# wood pickaxe; anything "iron" a stone pickaxe; "diamond" an iron pickaxe.
IMPLIED_TOOLS = {"stone": "wood_pickaxe", "iron": "stone_pickaxe", "diamond": "iron_pickaxe"}

# How a world is generated and populated (docs/crafter.md, "World rules"): crafter's
# worldgen and balancing, or the EnvGen authors' fork (aszala/EnvGen crafter/crafter/
# worldgen.py, env.py) in which every LLM environment of the paper was generated.
WORLD_RULES = ("stock", "authors")

STOCK_LENGTH = 10000  # crafter.Env's default episode length
LLM_ENV_LENGTH = 1024  # episode length of the authors' generated environments
MAX_LENGTH = 100_000

# Spellings LLMs produce for the same value.
_BIOME_ALIASES = {
    "none": "natural",
    "all": "natural",
    "beach": "beaches",
    "mountains": "mountain",
    "grasslands": "grassland",
}
_RARITY_ALIASES = {"verycommon": "very_common", "uncommon": "rare", "normal": "common"}
_TOP_KEYS = ("environment_settings", "inventory_settings", "length", "purpose")


@dataclasses.dataclass(frozen=True)
class CrafterConfig:
    """One Crafter world design. Frozen: hashable and safe to share across workers."""

    target_biome: str = "natural"
    """Biome the world is rescaled towards; "natural" is stock Crafter's mix."""
    coal_rarity: str = "common"
    """Coal spawn rarity in mountain caves ("common" = stock 0.85 threshold)."""
    iron_rarity: str = "common"
    """Iron spawn rarity in tunnels ("common" = stock 0.75 threshold)."""
    diamond_rarity: str = "rare"
    """Diamond spawn rarity deep in mountains ("rare" = stock 0.994 threshold)."""
    tree_rarity: str = "common"
    """Tree density in grassland ("common" = stock 0.8 threshold)."""
    inventory: tuple[tuple[str, int], ...] = ()
    """Starting items as sorted (name, count) pairs, implied tools included; empty = stock."""
    length: int = STOCK_LENGTH
    """Episode length in steps (stock 10000; the authors' LLM environments use 1024)."""
    purpose: str = ""
    """The LLM's stated purpose for this environment; informational only."""
    world_rules: str = "stock"
    """Generation and creature rules: "stock" Crafter or the "authors"' fork (WORLD_RULES).
    Not a setting the LLM writes: the run chooses it (RunConfig.llm_world_rules)."""
    warnings: list[str] = dataclasses.field(default_factory=list, compare=False, hash=False)
    """What validation clamped or adjusted; not part of the config's identity."""

    def __post_init__(self) -> None:
        if self.world_rules not in WORLD_RULES:
            raise ConfigError(
                "world_rules", f"{self.world_rules!r}; allowed: {', '.join(WORLD_RULES)}"
            )

    def threshold(self, resource: str) -> float:
        """Spawn threshold for coal, iron, tree or diamond under this config."""
        rarity = getattr(self, f"{resource}_rarity")
        return SPAWN_THRESHOLDS[resource][rarity]

    @property
    def is_stock(self) -> bool:
        """True when the world, start and length are exactly stock Crafter's."""
        stock_world = self.world_key == CrafterConfig().world_key
        return stock_world and not self.inventory and self.length == STOCK_LENGTH

    @property
    def world_key(self) -> tuple[str, ...]:
        """The fields that change world generation (not inventory or length)."""
        return (*(getattr(self, name) for name in ENV_FIELDS), self.world_rules)

    def to_dict(self) -> dict[str, Any]:
        """The authors' JSON layout; `from_dict(to_dict())` round-trips."""
        out: dict[str, Any] = {
            "environment_settings": {name: getattr(self, name) for name in ENV_FIELDS},
            "inventory_settings": dict(self.inventory),
            "length": self.length,
        }
        if self.purpose:
            out["purpose"] = self.purpose
        return out

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        default_length: int = STOCK_LENGTH,
        path: str = "",
        world_rules: str = "stock",
    ) -> CrafterConfig:
        """Validate untrusted input, the authors' nested layout or a flat mapping of the same keys,
        into a config (see module docstring). `default_length` applies when the input names no
        length (LLM environments pass `LLM_ENV_LENGTH`); `path` prefixes field paths in errors and
        warnings; `world_rules` is the caller's choice, never the input's (an LLM cannot set it)."""
        data = json_object(data, path)
        warnings: list[str] = []
        env_fields: dict[str, Any] = {}
        inv_fields: dict[str, Any] = {}
        length: Any = default_length
        purpose = ""
        for key, value in data.items():
            norm = norm_key(key)
            where = join_path(path, str(key))
            if norm == "environment_settings":
                env_fields.update(as_mapping(value, where))
            elif norm == "inventory_settings":
                inv_fields.update(as_mapping(value, where))
            elif norm in ENV_FIELDS:
                env_fields[key] = value
            elif norm in INVENTORY_MAX:
                inv_fields[key] = value
            elif norm in ("length", "episode_length"):
                length = value
            elif norm == "purpose":
                purpose = str(value)[:500]
            else:
                allowed = ", ".join((*_TOP_KEYS, *ENV_FIELDS, *INVENTORY_MAX))
                raise ConfigError(where, f"unknown key; allowed keys: {allowed}")

        settings: dict[str, str] = {}
        for key, value in env_fields.items():
            norm = norm_key(key)
            where = join_path(path, f"environment_settings.{key}")
            if norm not in ENV_FIELDS:
                raise ConfigError(where, f"unknown key; allowed keys: {', '.join(ENV_FIELDS)}")
            aliases = _BIOME_ALIASES if norm == "target_biome" else _RARITY_ALIASES
            # "default" means stock Crafter's value, the field's default
            aliases = {**aliases, "default": getattr(cls, norm)}
            settings[norm] = one_of(value, ENV_FIELDS[norm], aliases, where)

        inventory: dict[str, int] = {}
        for key, value in inv_fields.items():
            norm = norm_key(key)
            where = join_path(path, f"inventory_settings.{key}")
            if norm not in INVENTORY_MAX:
                raise ConfigError(where, f"unknown item; allowed items: {', '.join(INVENTORY_MAX)}")
            inventory[norm] = int_clamped(value, 0, INVENTORY_MAX[norm], where, warnings)
        for tool, item in implied_tools(inventory).items():
            inventory[tool] = 1
            warnings.append(
                f"{join_path(path, 'inventory_settings.' + tool)}: set to 1 because the "
                f"starting {item} implies it (the authors' loader rule)"
            )

        length_int = int_clamped(length, 1, MAX_LENGTH, join_path(path, "length"), warnings)
        return cls(
            **settings,
            inventory=tuple(sorted((k, v) for k, v in inventory.items() if v > 0)),
            length=length_int,
            purpose=purpose,
            world_rules=world_rules,
            warnings=warnings,
        )


def implied_tools(inventory: Mapping[str, int]) -> dict[str, str]:
    """{tool: the item implying it} for tools the start lacks (IMPLIED_TOOLS' substring rule)."""
    out: dict[str, str] = {}
    for item, count in inventory.items():
        for material, tool in IMPLIED_TOOLS.items():
            if material in item and count > 0 and inventory.get(tool, 0) < 1:
                out.setdefault(tool, item)
    return out


ENV_FIELDS: dict[str, tuple[str, ...]] = {
    "target_biome": BIOMES,
    "coal_rarity": RARITIES,
    "iron_rarity": RARITIES,
    "diamond_rarity": RARITIES,
    "tree_rarity": RARITIES,
}
