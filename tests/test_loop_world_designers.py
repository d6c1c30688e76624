"""The non-LLM designers: domain randomization and the rule-based adaptive heuristic."""

from pathlib import Path

import pytest
import yaml

from envgen.errors import ConfigError
from envgen.llm.conversation import PromptOptions
from envgen.loop.config import RunConfig
from envgen.loop.world_designers import (
    RECIPES,
    HeuristicDesigner,
    HeuristicSettings,
    RandomDesigner,
    first_recipes,
    make_designer,
    weakest_recipes,
)
from envgen.scoring import ACHIEVEMENTS


def stats(**low: float) -> dict[str, tuple[float, float]]:
    """50 % success everywhere except the skills given."""
    return {s: (low.get(s, 50.0), 10.0) for s in ACHIEVEMENTS}


def test_every_skill_has_a_recipe_and_every_recipe_passes_validation():
    assert {s for r in RECIPES for s in r.skills} == set(ACHIEVEMENTS)
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


SEED_MOD_3 = HeuristicSettings("seed_mod_3")


def purposes(designer) -> list[str]:
    return [c.purpose for c in designer.generate(4).configs]


def test_heuristic_first_sets_by_seed_are_three_different_sets_and_the_default_is_unchanged():
    default = {
        seed: purposes(make_designer("heuristic", PromptOptions(), seed)) for seed in range(6)
    }
    assert len({tuple(p) for p in default.values()}) == 1  # every seed the same first set
    assert default[0] == [r.purpose for r in weakest_recipes(None, 4)]
    by_seed = {
        seed: purposes(make_designer("heuristic", PromptOptions(), seed, SEED_MOD_3))
        for seed in range(6)
    }
    sets = [frozenset(by_seed[k]) for k in range(3)]
    assert len(set(sets)) == 3 and all(len(s) == 4 for s in sets)
    assert frozenset().union(*sets) == {r.purpose for r in RECIPES}  # every recipe in one
    assert [by_seed[k + 3] for k in range(3)] == [by_seed[k] for k in range(3)]  # seed mod 3
    assert by_seed[0] == default[0]  # set 0 is the default's first set
    initial_set_1 = HeuristicDesigner(PromptOptions(initial_set=1))
    assert by_seed[1] == purposes(initial_set_1)  # set 1 is the default's first set of set 1
    shifted = make_designer("heuristic", PromptOptions(initial_set=1), 0, SEED_MOD_3)
    assert purposes(shifted) == by_seed[1]  # (seed + initial set) mod 3
    assert [r.purpose for r in first_recipes(4, 2)] == [
        RECIPES[i].purpose for i in (0, 3, 5, 6)
    ]  # the tool ladder: wood, stone, iron, diamond
    assert len(first_recipes(8, 2)) == 8 and len(first_recipes(1, 1)) == 1


def test_heuristic_adapts_the_same_after_any_first_set():
    feedback = stats(collect_iron=0.0)
    a = make_designer("heuristic", PromptOptions(), 2, SEED_MOD_3)
    b = make_designer("heuristic", PromptOptions(), 2)
    a.generate(4), b.generate(4)
    assert a.adapt(feedback).configs == b.adapt(feedback).configs


def test_heuristic_first_set_field_keeps_committed_hashes_and_is_heuristic_only():
    committed = RunConfig(designer="heuristic")
    assert "heuristic_first_set" not in committed.to_dict()
    # Every committed run store directory still names its config's hash.
    runs = Path(__file__).resolve().parents[1] / "results" / "runs"
    for run_yaml in sorted(runs.glob("*/seed-*/run.yaml")):
        data = yaml.safe_load(run_yaml.read_text())
        recorded = data.pop("config_hash")
        data.pop("seed")
        assert RunConfig.from_dict(data).config_hash() == recorded == run_yaml.parent.parent.name
    by_seed = RunConfig(designer="heuristic", heuristic_first_set="seed_mod_3")
    assert by_seed.config_hash() != committed.config_hash()
    assert RunConfig.from_dict(by_seed.to_dict()) == by_seed
    with pytest.raises(ConfigError, match="heuristic_first_set"):
        RunConfig(designer="random", heuristic_first_set="seed_mod_3")
    with pytest.raises(ConfigError, match="heuristic_first_set"):
        RunConfig(designer="heuristic", heuristic_first_set="per_seed")
