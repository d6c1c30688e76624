"""Profiles: params.yaml's three budgets load; scaling rounds to rollouts; bad keys fail."""

from pathlib import Path

import pytest
import yaml

from envgen.errors import ConfigError
from envgen.llm.conversation import PromptOptions
from envgen.loop.config import RunConfig
from envgen.loop.runner import designer_options
from envgen.pipeline.plan import plan_table
from envgen.pipeline.profile import load_profile

PARAMS = yaml.safe_load(Path("params.yaml").read_text())
HEIST = PARAMS["profiles"]["smoke"]["games"]["heist"]


def test_params_yaml_profiles_load_and_smoke_is_default():
    assert PARAMS["profile"] == "smoke"
    for name in ("smoke", "reduced", "paper"):
        assert load_profile(PARAMS, name).name == name


def test_paper_profile_keeps_the_papers_protocol_exactly():
    paper = load_profile(PARAMS, "paper")
    config = paper.apply(RunConfig(), initial_set=2)
    assert config.total_steps == 1_960_000
    assert (config.llm_env_steps, config.final_steps) == (120_000, 1_000_000)
    assert config.model == "paper" and config.ppo == () and config.initial_set == 2
    assert len(paper.seeds) * len(paper.initial_sets) == 30 and paper.claim_grade


def test_paper_profile_names_the_papers_llm_and_worlds():
    paper, smoke = load_profile(PARAMS, "paper"), load_profile(PARAMS, "smoke")
    config = paper.apply(RunConfig(), initial_set=0)
    assert config.llm_model == "gpt-4-1106-preview"
    assert (config.llm_world_rules, config.original_world) == ("authors", "stock")
    # The smoke rows' designer: the open 1.5B model, sampled at 0.7, redrawing repeats.
    designed = smoke.apply(RunConfig(), 0)
    assert designed.llm_model == "qwen2.5-coder-1.5b-instruct"
    assert (designed.llm_temperature, designed.llm_redraw_repeats) == (0.7, True)
    # A row's own model (Table 5) and its own original world (the worlds rows) win.
    own = RunConfig(llm_model="smollm2-135m-instruct", original_world="authors")
    applied = paper.apply(own, 0, own={"llm_model", "original_world"})
    assert (applied.llm_model, applied.original_world) == ("smollm2-135m-instruct", "authors")
    assert paper.apply(own, 0).llm_model == "gpt-4-1106-preview"  # not the row's own: profile's
    assert paper.apply(RunConfig(method="original_only"), 0).llm_model == RunConfig().llm_model
    bad = {**PARAMS["profiles"]["smoke"], "original_world": "fork"}
    with pytest.raises(ConfigError, match="original_world"):
        load_profile({"profile": "x", "profiles": {"x": bad}})


def test_smoke_scales_phases_to_whole_rollouts_with_a_minimum():
    smoke = load_profile(PARAMS, "smoke")
    rollout = smoke.rollout_size
    assert rollout == 8 * 64
    config = smoke.apply(RunConfig(), initial_set=0)
    assert config.llm_env_steps % rollout == 0 and config.final_steps % rollout == 0
    forty = smoke.apply(RunConfig(n_cycles=40, llm_env_steps=12_000, orig_env_steps=12_000), 0)
    assert forty.llm_env_steps == rollout  # min_rollouts keeps a phase non-empty
    assert smoke.steps(0) == 0  # a phase the paper does not have stays absent


def test_history_bound_comes_from_the_profile_unless_the_row_sets_one():
    smoke, paper = load_profile(PARAMS, "smoke"), load_profile(PARAMS, "paper")
    assert paper.apply(RunConfig(n_cycles=40), 0).llm_history_cycles == 0  # whole history
    assert smoke.apply(RunConfig(n_cycles=40), 0).llm_history_cycles == "auto"
    own = {"llm_history_cycles"}
    assert smoke.apply(RunConfig(llm_history_cycles=5), 0, own).llm_history_cycles == 5
    cpu = load_profile(PARAMS, "cpu")  # the registered campaigns' hashes (docs/llm.md, "Context")
    assert cpu.apply(RunConfig(), 0).llm_history_cycles == 2


def test_a_rows_own_zero_history_bound_is_not_the_profiles():
    """A row that asks for the whole history (0) gets it under any profile (issue 66)."""
    spec = {"table": "t", "rows": [{"row": "whole", "run": {"llm_history_cycles": 0}}]}
    for name, bound in (("smoke", "auto"), ("cpu", 2)):
        profile = load_profile(PARAMS, name)
        assert profile.apply(RunConfig(), 0).llm_history_cycles == bound  # the row sets none
        job = plan_table(spec, profile).rows[0].jobs[0]
        assert job.config.llm_history_cycles == 0


def test_a_profile_may_keep_the_whole_history_while_it_fits():
    """`auto` (docs/llm.md, "Context") reaches every row that sets no bound of its own."""
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["profiles"]["cpu"]["llm_history_cycles"] = "auto"
    cpu = load_profile(params, "cpu")
    assert cpu.apply(RunConfig(n_cycles=40), 0).llm_history_cycles == "auto"
    row = cpu.apply(RunConfig(llm_history_cycles=2), 0, {"llm_history_cycles"})
    assert row.llm_history_cycles == 2
    params["profiles"]["cpu"]["llm_history_cycles"] = "often"
    with pytest.raises(ConfigError, match="profiles.cpu.llm_history_cycles: 'often'"):
        load_profile(params, "cpu")


def test_temperature_comes_from_the_profile_to_llm_rows_unless_the_row_sets_one():
    params = yaml.safe_load(Path("params.yaml").read_text())
    assert load_profile(params, "paper").llm_temperature == 0.0  # optional key, paper's 0
    params["profiles"]["smoke"]["llm_temperature"] = 0.7
    smoke = load_profile(params, "smoke")
    assert smoke.apply(RunConfig(), 0).llm_temperature == 0.7
    own = RunConfig(llm_temperature=0.2)
    assert smoke.apply(own, 0, own={"llm_temperature"}).llm_temperature == 0.2
    # Rows without LLM replies keep the default, hence their hash.
    heuristic = RunConfig(designer="heuristic")
    assert smoke.apply(heuristic, 0).llm_temperature == 0.0
    assert smoke.apply(RunConfig(method="original_only"), 0).llm_temperature == 0.0
    # 0 is left out of the hash (every committed run keeps its own); above 0 it counts.
    assert "llm_temperature" not in RunConfig().to_dict()
    warm = RunConfig(llm_temperature=0.7)
    assert warm.config_hash() != RunConfig().config_hash()
    assert RunConfig.from_dict(warm.to_dict()) == warm


def test_redraw_repeats_comes_from_the_profile_to_llm_rows_and_counts_only_when_on():
    params = yaml.safe_load(Path("params.yaml").read_text())
    assert load_profile(params, "paper").llm_redraw_repeats is False  # optional key
    params["profiles"]["smoke"]["llm_redraw_repeats"] = True
    smoke = load_profile(params, "smoke")
    assert smoke.apply(RunConfig(), 0).llm_redraw_repeats is True
    assert smoke.apply(RunConfig(designer="random"), 0).llm_redraw_repeats is False
    assert "llm_redraw_repeats" not in RunConfig().to_dict()
    on = RunConfig(llm_redraw_repeats=True)
    assert on.config_hash() != RunConfig().config_hash()
    assert RunConfig.from_dict(on.to_dict()) == on


def test_the_runs_llm_settings_reach_its_designer():
    config = RunConfig(
        initial_set=2,
        obfuscated=True,
        llm_history_cycles=3,
        llm_temperature=0.7,
        llm_redraw_repeats=True,
    )
    assert designer_options(config, "json_schema") == PromptOptions(
        initial_set=2,
        obfuscate=True,
        structured="json_schema",
        history_cycles=3,
        temperature=0.7,
        redraw_repeats=True,
    )


def test_original_only_rows_ignore_the_initial_set():
    smoke = load_profile(PARAMS, "smoke")
    assert smoke.apply(RunConfig(method="original_only"), initial_set=2).initial_set == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"stepscale": 1.0}, "profiles.smoke.stepscale"),
        ({"seeds": []}, "profiles.smoke.seeds"),
        ({"ppo": {"num_env": 2}}, "profiles.smoke.ppo.num_env"),
        ({"model": "huge"}, "model"),
        ({"llm_history_cycles": -1}, "profiles.smoke.llm_history_cycles"),
        ({"llm_temperature": 2.5}, "profiles.smoke.llm_temperature"),
        ({"llm_temperature": float("nan")}, "profiles.smoke.llm_temperature"),
        ({"games": {"heist": {"seed": [0]}}}, "profiles.smoke.games.heist.seed"),
        ({"games": {"crafter": {}}}, "profiles.smoke.games.crafter"),
        (
            {"games": {"heist": {**HEIST, "eval_episodes": 0}}},
            "profiles.smoke.games.heist.eval_episodes",
        ),
        (
            {"games": {"heist": {**HEIST, "ppo": {"num_env": 2}}}},
            "profiles.smoke.games.heist.ppo.num_env",
        ),
    ],
)
def test_bad_profile_fields_are_named(change, field):
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["profiles"]["smoke"].update(change)
    with pytest.raises(ConfigError) as info:
        load_profile(params)
    assert info.value.path == field


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ConfigError, match="smoke, cpu, reduced, paper"):
        load_profile(PARAMS, "huge")


def test_heist_rows_take_the_games_section_and_round_to_heist_rollouts():
    smoke = load_profile(PARAMS, "smoke")
    row = RunConfig(game="heist", method="original_only", model="impala-small")
    config = smoke.apply(row.replace(original_only_steps=25_000_000), 0)
    assert (config.model, config.eval_episodes) == ("nature", 10)  # not Crafter's 3
    assert config.total_steps == 5 * 512
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["profiles"]["smoke"]["games"]["heist"]["ppo"] = {}  # CleanRL's 64 x 256 rollouts
    heist = load_profile(params).for_game("heist")
    assert heist.rollout_size == 64 * 256 and heist.steps(25_000_000) == 16_384


def test_a_profile_without_a_heist_section_names_what_to_add():
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["profiles"]["smoke"]["games"] = {}
    with pytest.raises(ConfigError) as info:
        load_profile(params).apply(RunConfig(game="heist"), 0)
    assert info.value.path == "profiles.smoke.games.heist"
    assert "step_scale, seeds, initial_sets, model, ppo, eval_episodes" in str(info.value)
