"""HeistConfig validation: CrafterConfig's contract (errors name the field, clamps recorded)."""

import pytest

from envgen.envs.heist import HeistConfig
from envgen.envs.heist.config import max_colours
from envgen.errors import ConfigError


def test_defaults_are_plain_easy_heist():
    c = HeistConfig()
    assert c.is_stock and not c.constrains_level
    assert c.distribution_mode == "easy"
    assert HeistConfig.from_dict({}) == c
    assert HeistConfig.from_dict(c.to_dict()) == c


def test_llm_spellings_are_accepted():
    c = HeistConfig.from_dict(
        {
            "environment_settings": {
                "Distribution Mode": "Hard",
                "maze size": "11x11",
                "keys": "2",
            },
            "inventory_settings": {"starting_keys": 1.0},
        }
    )
    assert (c.distribution_mode, c.maze_size, c.num_keys, c.keys_held) == ("hard", 11, 2, 1)
    assert c.warnings == []
    flat = HeistConfig.from_dict({"mode": "default", "maze_size": "random", "num_keys": None})
    assert flat == HeistConfig()
    assert HeistConfig.from_dict({"num_keys": 2, "keys_held": "all"}).keys_held == 2


def test_unknown_key_names_path_and_allowed():
    with pytest.raises(ConfigError) as err:
        HeistConfig.from_dict({"environment_settings": {"lava": 1}})
    assert err.value.path == "environment_settings.lava"
    assert "maze_size" in str(err.value) and "num_keys" in str(err.value)
    with pytest.raises(ConfigError, match="keys_held"):
        HeistConfig.from_dict({"gems": 2})


def test_bad_enum_lists_allowed_values():
    with pytest.raises(ConfigError, match="easy, hard") as err:
        HeistConfig.from_dict({"environment_settings": {"distribution_mode": "extreme"}})
    assert err.value.path == "environment_settings.distribution_mode"


@pytest.mark.parametrize("bad", [[1], "huge", float("nan"), {"a": 1}])
def test_non_numeric_sizes_rejected(bad):
    with pytest.raises(ConfigError, match="environment_settings.maze_size"):
        HeistConfig.from_dict({"environment_settings": {"maze_size": bad}})


def test_out_of_range_clamped_with_warning():
    c = HeistConfig.from_dict({"environment_settings": {"maze_size": 13, "num_keys": 3}})
    assert (c.maze_size, c.num_keys) == (9, 3)  # easy mode's largest maze
    assert any("maze_size" in w and "clamped to 9" in w for w in c.warnings)
    small = HeistConfig.from_dict({"maze_size": 5, "num_keys": 3, "keys_held": 2})
    assert (small.num_keys, small.keys_held) == (1, 1)  # a 5x5 maze has at most one colour
    assert len(small.warnings) == 2
    even = HeistConfig.from_dict({"mode": "hard", "maze_size": 12})
    assert even.maze_size == 11 and "odd" in even.warnings[0]


def test_engine_colour_limits():
    assert [max_colours(size) for size in (5, 7, 9, 11, 13)] == [1, 2, 3, 3, 3]


def test_direct_construction_is_checked():
    with pytest.raises(ConfigError, match="maze_size"):
        HeistConfig(maze_size=6)
    with pytest.raises(ConfigError, match="num_keys"):
        HeistConfig(maze_size=7, num_keys=3)
    with pytest.raises(ConfigError, match="keys_held"):
        HeistConfig(num_keys=1, keys_held=2)


def test_round_trip_and_hash():
    c = HeistConfig.from_dict(
        {
            "environment_settings": {"distribution_mode": "hard", "maze_size": 13},
            "inventory_settings": {"keys_held": 1},
            "purpose": "practise the last door",
        }
    )
    assert HeistConfig.from_dict(c.to_dict()) == c
    assert hash(c) == hash(HeistConfig.from_dict(c.to_dict()))
    assert not c.is_stock and c.constrains_level
