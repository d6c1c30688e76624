"""The design-quality measures read only cache entries: distinct worlds, out-of-range
values, and whether an adaptation moved toward the weakest skills."""

import json

from envgen.envs.crafter.config import CrafterConfig
from envgen.loop.design_quality import reply_quality, supports, weakest
from envgen.loop.world_designers import RECIPES
from envgen.scoring import ACHIEVEMENTS


def reply(*worlds):
    return json.dumps({"environments": [{"purpose": "p", **w} for w in worlds]})


IRON = {
    "environment_settings": {"target_biome": "mountain", "iron_rarity": "very_common",
                             "coal_rarity": "very_common"},
    "inventory_settings": {"stone_pickaxe": 1, "wood": 5, "coal": 2, "stone": 3},
}  # fmt: skip
WOOD = {"environment_settings": {"target_biome": "grassland"}, "inventory_settings": {"wood": 3}}


def test_a_world_supports_the_skills_of_recipes_it_is_at_least_as_generous_as():
    iron_recipe = next(r for r in RECIPES if "collect_iron" in r.skills)
    assert supports(CrafterConfig.from_dict(IRON, default_length=100), iron_recipe)
    stingy = {
        **IRON,
        "environment_settings": {**IRON["environment_settings"], "iron_rarity": "rare"},
    }
    assert not supports(CrafterConfig.from_dict(stingy, default_length=100), iron_recipe)


def test_adaptation_toward_the_weakest_skills_is_positive_and_a_repeat_is_zero():
    feedback = "\n".join(
        f"- {s}: {0 if s in ('collect_iron', 'make_iron_pickaxe') else 50}% +/- 1%"
        for s in ACHIEVEMENTS
    )
    assert weakest(feedback)[:2] == ["collect_iron", "make_iron_pickaxe"]
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": reply(WOOD, WOOD)},
        {"role": "user", "content": feedback},
    ]
    entry = {
        "label": "crafter/adapt3/n2/set0",
        "request": {"messages": messages},
        "response": {"text": reply(IRON, WOOD)},
    }
    moved = reply_quality(entry)
    assert moved is not None and moved.distinct == 2 and moved.out_of_range == 0
    assert moved.toward_weakness is not None and moved.toward_weakness > 0
    same = reply_quality({**entry, "response": {"text": reply(WOOD, WOOD)}})
    assert same is not None and same.distinct == 1 and same.toward_weakness == 0


def test_out_of_range_values_are_counted_before_clamping():
    wild = {"environment_settings": {}, "inventory_settings": {"wood": 10, "stone": 12}}
    entry = {"label": "crafter/initial/n1/set0", "request": {"messages": []},
             "response": {"text": reply(wild)}}  # fmt: skip
    quality = reply_quality(entry)
    assert quality is not None and quality.out_of_range == 2 and quality.toward_weakness is None
