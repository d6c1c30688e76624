"""CrafterConfig validation: errors name the field, clamping is recorded."""

import pytest

from envgen.envs.crafter import CrafterConfig
from envgen.envs.crafter.config import SPAWN_THRESHOLDS
from envgen.errors import ConfigError


def test_defaults_are_stock_crafter():
    c = CrafterConfig()
    assert c.is_stock
    assert c.threshold("coal") == 0.85 and c.threshold("iron") == 0.75
    assert c.threshold("tree") == 0.8 and c.threshold("diamond") == 0.994
    assert CrafterConfig.from_dict({}) == c


def test_llm_spellings_are_accepted():
    c = CrafterConfig.from_dict(
        {
            "environment_settings": {
                "target_biome": "none",
                "coal_rarity": "very common",
                "iron_rarity": "Very_Common",
                "diamond_rarity": "default",
            },
            "inventory_settings": {"wood": "3", "sapling": 2.0},
        }
    )
    assert c.target_biome == "natural"
    assert c.coal_rarity == c.iron_rarity == "very_common"
    assert c.diamond_rarity == "rare"  # "default" is stock's value for that field
    assert dict(c.inventory) == {"wood": 3, "sapling": 2}
    assert c.warnings == []


def test_unknown_key_names_path_and_allowed():
    with pytest.raises(ConfigError) as err:
        CrafterConfig.from_dict({"environment_settings": {"lava_rarity": "rare"}})
    assert err.value.path == "environment_settings.lava_rarity"
    assert "coal_rarity" in str(err.value)


def test_bad_enum_lists_allowed_values():
    with pytest.raises(ConfigError, match="very_common, common, rare") as err:
        CrafterConfig.from_dict({"environment_settings": {"iron_rarity": "abundant"}})
    assert err.value.path == "environment_settings.iron_rarity"


@pytest.mark.parametrize("bad", [None, [1], "many", float("nan")])
def test_non_numeric_inventory_rejected(bad):
    with pytest.raises(ConfigError, match="inventory_settings.wood"):
        CrafterConfig.from_dict({"inventory_settings": {"wood": bad}})


def test_out_of_range_clamped_with_warning():
    c = CrafterConfig.from_dict({"inventory_settings": {"wood": 50, "iron_sword": 3, "coal": -2}})
    assert dict(c.inventory) == {"wood": 9, "iron_sword": 1, "stone_pickaxe": 1}  # implied
    assert any("inventory_settings.wood" in w and "clamped to 9" in w for w in c.warnings)
    assert any("inventory_settings.coal" in w for w in c.warnings)


def test_implied_tools_added():
    c = CrafterConfig.from_dict({"inventory_settings": {"stone": 1, "iron": 1, "diamond": 1}})
    inv = dict(c.inventory)
    assert inv["wood_pickaxe"] == inv["stone_pickaxe"] == inv["iron_pickaxe"] == 1


@pytest.mark.parametrize(
    ("item", "implied"),
    [
        ("stone_pickaxe", {"wood_pickaxe"}),
        ("stone_sword", {"wood_pickaxe"}),
        ("iron_sword", {"stone_pickaxe"}),
        ("iron_pickaxe", {"stone_pickaxe"}),
        ("wood_sword", set()),
        ("coal", set()),
    ],
)
def test_implied_tools_match_item_names_as_the_authors_loader(item, implied):
    """env_loader.py tests `"stone" in item` over every item name, tools included."""
    c = CrafterConfig.from_dict({"inventory_settings": {item: 1}})
    assert set(dict(c.inventory)) - {item} == implied
    assert len(c.warnings) == len(implied)


def test_implied_tools_do_not_chain():
    """Only the reply's own items imply tools (iron gives a stone pickaxe, nothing more)."""
    assert dict(CrafterConfig.from_dict({"inventory_settings": {"iron": 2}}).inventory) == {
        "iron": 2,
        "stone_pickaxe": 1,
    }


def test_world_rules_are_the_callers_not_the_inputs():
    c = CrafterConfig.from_dict({"target_biome": "mountain"}, world_rules="authors")
    assert c.world_rules == "authors" and not c.is_stock
    assert c != CrafterConfig.from_dict({"target_biome": "mountain"})
    with pytest.raises(ConfigError, match="world_rules"):
        CrafterConfig.from_dict({"world_rules": "authors"})
    with pytest.raises(ConfigError, match="world_rules"):
        CrafterConfig(world_rules="fork")


def test_round_trip_and_hash():
    c = CrafterConfig.from_dict(
        {
            "environment_settings": {"target_biome": "mountain"},
            "inventory_settings": {"wood": 2},
            "length": 1024,
        }
    )
    assert CrafterConfig.from_dict(c.to_dict()) == c
    assert hash(c) == hash(CrafterConfig.from_dict(c.to_dict()))
    assert not c.is_stock


def test_thresholds_table_matches_paper():
    assert SPAWN_THRESHOLDS["coal"] == {"rare": 0.95, "common": 0.85, "very_common": 0.75}
    assert SPAWN_THRESHOLDS["diamond"]["very_common"] == 0.85
