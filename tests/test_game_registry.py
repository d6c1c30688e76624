"""A game is one entry of `envgen.games.GAMES` (with its rules, `envgen.envs.game_rules`,
and its design spec): what the config, the profiles, the runner, the report and the
evidence do differently per game is read from there, never from its name. A second Heist
registered under another name is taken as Heist everywhere."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from envgen.envs.game_rules import GAME_RULES
from envgen.errors import ConfigError
from envgen.evidence import derive
from envgen.games import GAMES
from envgen.loop.config import RunConfig
from envgen.pipeline.profile import load_profile


@pytest.fixture
def heist2(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, "heist2", "heist")


def register(monkeypatch: pytest.MonkeyPatch, name: str, like: str) -> None:
    monkeypatch.setitem(GAMES, name, dataclasses.replace(GAMES[like], name=name))
    monkeypatch.setitem(GAME_RULES, name, GAME_RULES[like])


def test_each_game_points_at_its_rules():
    assert set(GAME_RULES) == set(GAMES)
    assert all(spec.rules is GAME_RULES[name] for name, spec in GAMES.items())


def test_a_registered_game_is_a_run_configs_game_with_its_entrys_rules(heist2: None):
    config = RunConfig(game="heist2", n_cycles=1)
    assert not config.cohort_eligible  # Heist's entry: no cohorts
    with pytest.raises(ConfigError, match="method: 'easy_to_hard' .* crafter only"):
        RunConfig(game="heist2", method="easy_to_hard")
    with pytest.raises(ConfigError, match="designer: 'random' writes plain-named Crafter"):
        RunConfig(game="heist2", designer="random")
    assert RunConfig(game="crafter", method="original_only", cohort=2).cohort == 2


def test_a_profile_budgets_a_base_game_itself_and_another_in_its_section(heist2, monkeypatch):
    register(monkeypatch, "crafter2", "crafter")
    params = yaml.safe_load(Path("params.yaml").read_text())
    games = params["profiles"]["smoke"]["games"]
    games["heist2"] = dict(games["heist"])
    assert load_profile(params, "smoke").for_game("heist2").where == "profiles.smoke.games.heist2"
    games["crafter2"] = dict(games["heist"])
    with pytest.raises(ConfigError, match="not a game with its own section.*: heist, heist2$"):
        load_profile(params, "smoke")


def test_a_game_scored_by_its_test_is_rederived_from_its_test_log(heist2: None, monkeypatch):
    def log(path):
        raise LookupError(path.name)  # the first log rederived reads, then stop

    monkeypatch.setattr(derive, "read_jsonl", log)
    with pytest.raises(LookupError, match="^test_episodes.jsonl$"):
        derive.rederived("run", {"game": "heist2", "method": "envgen"})
    with pytest.raises(LookupError, match="^episodes.jsonl$"):
        derive.rederived("run", {"method": "envgen"})
