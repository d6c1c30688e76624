"""The non-LLM designers: domain randomization and the rule-based adaptive heuristic."""

import pytest

from envgen.errors import ConfigError
from envgen.llm.designer import PromptOptions
from envgen.loop.config import RunConfig
from envgen.loop.designers import (
    RECIPE_OF,
    RECIPES,
    HeuristicDesigner,
    RandomDesigner,
    weakest_recipes,
)
from envgen.scoring import ACHIEVEMENTS


def stats(**low: float) -> dict[str, tuple[float, float]]:
    """50 % success everywhere except the skills given."""
    return {s: (low.get(s, 50.0), 10.0) for s in ACHIEVEMENTS}


def test_every_skill_has_a_recipe_and_every_recipe_passes_validation():
    assert set(RECIPE_OF) == set(ACHIEVEMENTS)
    designer = HeuristicDesigner(PromptOptions())
    parsed = designer.generate(len(RECIPES))
    assert [c.purpose for c in parsed.configs] == [r.purpose for r in RECIPES]
    assert not any(c.warnings for c in parsed.configs)


def test_heuristic_targets_the_weakest_skill():
    designer = HeuristicDesigner(PromptOptions())
    designer.generate(4)
    first = designer.adapt(stats(collect_iron=0.0)).configs[0]
    assert (first.target_biome, first.iron_rarity) == ("mountain", "very_common")
    assert dict(first.inventory)["stone_pickaxe"] == 1
    again = designer.adapt(stats(collect_diamond=0.0, collect_iron=60.0)).configs[0]
    assert (again.diamond_rarity, dict(again.inventory)["iron_pickaxe"]) == ("very_common", 1)
    assert "+/-" in designer.messages[-2].content  # it read the LLM's feedback prompt


def test_heuristic_ties_go_to_the_easier_skill_and_the_first_call_spreads():
    assert weakest_recipes(stats(), 1)[0] is RECIPES[0]
    spread = weakest_recipes(None, 4)
    assert len(set(spread)) == 4
    assert weakest_recipes(None, 4, offset=1) != spread


def test_random_designer_is_seeded_and_diverse():
    def envs(seed: int, initial_set: int = 0):
        return RandomDesigner(PromptOptions(initial_set=initial_set), seed).generate(4).configs

    assert envs(0) == envs(0)
    assert envs(0) != envs(1) and envs(0) != envs(0, initial_set=1)
    assert len({c.to_dict()["environment_settings"]["target_biome"] for c in envs(3)}) > 1
    designer = RandomDesigner(PromptOptions(), 0)
    assert designer.generate(4).configs != designer.adapt(stats()).configs  # new draw


def test_designer_field_keeps_llm_hashes_and_refuses_other_games():
    assert "designer" not in RunConfig().to_dict()
    assert RunConfig(designer="random").config_hash() != RunConfig().config_hash()
    assert RunConfig(designer="heuristic").uses_designer
    assert not RunConfig(designer="heuristic").uses_llm
    with pytest.raises(ConfigError, match="designer"):
        RunConfig(designer="heuristic", game="heist", n_cycles=1)
    with pytest.raises(ConfigError, match="designer"):
        RunConfig(designer="gpt")
