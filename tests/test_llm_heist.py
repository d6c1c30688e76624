"""The Heist designer: prompt content from the config module, reply parsing, cache replay."""

from __future__ import annotations

import json

import pytest

from envgen.envs.heist.config import MAX_MAZE, MODES, HeistConfig
from envgen.errors import ConfigError, LLMResponseError
from envgen.llm.cache import DEFAULT_CACHE_DIR, CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.design_spec import design_spec
from envgen.llm.heist import PROMPTS, SKILLS, environment_schema
from envgen.llm.names import NameMap
from envgen.llm.parse import parse_environments
from envgen.llm.planned_calls import PLANNED_CALLS
from envgen.llm.request import ChatResponse, Usage

REAL = NameMap({})


def block(purpose: str, settings: dict) -> str:
    return f"Purpose: {purpose}\n```json\n{json.dumps(settings)}\n```\n"


def env(mode="easy", size=9, keys=2, held=0) -> dict:
    return {
        "environment_settings": {"distribution_mode": mode, "maze_size": size, "num_keys": keys},
        "inventory_settings": {"keys_held": held},
    }


def test_initial_prompt_lists_skills_parameters_and_allowed_values():
    text = PROMPTS.initial_prompt(4, REAL, structured=False)
    for skill in SKILLS:
        assert f"- {skill}:" in text
    for field in ("distribution_mode", "maze_size", "num_keys", "keys_held"):
        assert f"- {field}:" in text
    assert f"one of {', '.join(MODES)}" in text
    for mode, top in MAX_MAZE.items():
        assert f"{', '.join(map(str, range(5, top + 1, 2)))} in {mode} mode" in text
    assert "size 5: at most 1, size 7: at most 2, size 9 and larger: at most 3" in text
    assert "Write exactly 4 such environments" in text
    # The example block in the prompt parses as a plain-Heist config.
    example = parse_environments(text.split("for example:")[1], 1, "heist").configs[0]
    assert example == HeistConfig(purpose="which skills this environment trains")


def test_obfuscated_prompt_hides_names_and_replies_map_back():
    names = design_spec("heist").name_map(True)
    text = PROMPTS.initial_prompt(4, names, structured=True)
    for real in ("distribution_mode", "maze_size", "num_keys", "keys_held", "hard mode"):
        assert real not in text
    assert "5, 7, 9, 11, 13 in optionB mode" in text
    reply = json.dumps(
        {
            "environments": [
                {
                    "purpose": "p",
                    "environment_settings": {
                        "parameter1": "optionB",
                        "parameter2": 13,
                        "parameter3": 3,
                    },
                    "inventory_settings": {"item1": 2},
                }
            ]
        }
    )
    (config,) = parse_environments(reply, 1, "heist", obfuscated=True).configs
    assert config == HeistConfig("hard", 13, 3, 2, purpose="p")


def test_schema_enumerates_the_config_module_values():
    schema = environment_schema(REAL)
    props = schema["properties"]["environment_settings"]["properties"]
    assert props["distribution_mode"]["enum"] == list(MODES)
    assert props["maze_size"]["enum"] == [5, 7, 9, 11, 13]
    assert props["num_keys"]["enum"] == [0, 1, 2, 3]


def test_good_free_text_reply_parses_into_heist_configs():
    reply = (
        "Here are the environments.\n"
        + block("find the gem without doors", env(size=5, keys=0))
        + block("one door", env(size=7, keys=1))
        + block("practise the whole chain", env(size=9, keys=3, held=1))
        + block("big hard mazes", env(mode="hard", size=13, keys="random"))
    )
    parsed = parse_environments(reply, 4, game="heist")
    assert parsed.configs == [
        HeistConfig(maze_size=5, num_keys=0, purpose="find the gem without doors"),
        HeistConfig(maze_size=7, num_keys=1, purpose="one door"),
        HeistConfig(maze_size=9, num_keys=3, keys_held=1, purpose="practise the whole chain"),
        HeistConfig("hard", 13, None, purpose="big hard mazes"),
    ]
    assert parsed.warnings == []


def test_out_of_range_values_are_clamped_with_warnings():
    reply = block("too big", env(size=13, keys=3, held=5)) + block("even", env(size=8, keys=3))
    parsed = parse_environments(reply, 2, game="heist")
    assert parsed.configs[0] == HeistConfig(maze_size=9, num_keys=3, keys_held=3, purpose="too big")
    assert parsed.configs[1] == HeistConfig(maze_size=7, num_keys=2, purpose="even")
    text = "\n".join(parsed.warnings)
    assert "environment[0].environment_settings.maze_size: 13 out of range" in text
    assert "environment[0].inventory_settings.keys_held" in text
    assert "environment[1].environment_settings.maze_size: 8 is even" in text


def test_broken_replies_say_what_is_wrong():
    with pytest.raises(LLMResponseError, match="no JSON object"):
        parse_environments("I would make four mazes.", 4, game="heist")
    truncated = block("ok", env()) + '```json\n{"environment_settings": {"maze_size": 7'
    with pytest.raises(LLMResponseError, match="found 1 usable"):
        parse_environments(truncated, 2, game="heist")
    bad = block("ok", env()) + block("bad", env(mode="medium"))
    with pytest.raises(LLMResponseError, match=r"distribution_mode: 'medium' is not allowed"):
        parse_environments(bad, 2, game="heist")
    unknown = block("x", {"environment_settings": {"maze_size": 5, "walls": "many"}})
    with pytest.raises(LLMResponseError, match="walls: unknown key; allowed keys"):
        parse_environments(unknown, 1, game="heist")


def test_adaptation_prompt_reports_skills_and_previous_environments():
    previous = [HeistConfig(maze_size=7, num_keys=2, purpose="two doors")]
    stats = {"collect_keys": (80.0, 5.0), "open_doors": (40.0, 10.0), "steal_gem": (20.0, 4.0)}
    text = PROMPTS.adaptation_prompt(previous, stats, 4, REAL, structured=False)
    assert "- open_doors: 40% +/- 10%" in text
    assert '"maze_size": 7' in text and "Purpose: two doors" in text
    with pytest.raises(ConfigError, match="missing skills steal_gem"):
        PROMPTS.adaptation_prompt(previous, {k: stats[k] for k in list(stats)[:2]}, 4, REAL, False)


def test_heist_adaptations_follow_the_authors_layout_too():
    """Obfuscated or not: a self-contained first adaptation, then results messages."""
    stats = {"collect_keys": (80.0, 5.0), "open_doors": (40.0, 10.0), "steal_gem": (20.0, 4.0)}
    for obfuscate in (False, True):
        reply = json.dumps({"environments": [env()]})
        if obfuscate:
            reply = reply.replace("distribution_mode", "parameter1").replace(
                "maze_size", "parameter2"
            )
            reply = reply.replace("num_keys", "parameter3").replace("keys_held", "item1")
            reply = reply.replace('"easy"', '"optionA"')
        sent = []

        def llm(request, reply=reply, sent=sent):
            sent.append(request.messages)
            return ChatResponse(reply, "scripted", Usage(1, 1), "stop", 0)

        designer = EnvironmentDesigner(PromptOptions(game="heist", obfuscate=obfuscate), llm)
        designer.generate(1)
        designer.adapt(stats)
        designer.adapt(stats)
        assert [len(m) for m in sent] == [1, 1, 3]
        assert sent[1][0].content.startswith("You design training environments") and (
            "- open_doors: 40% +/- 10%" in sent[1][0].content
        )
        assert sent[2][-1].content.startswith("The agent trained in the environments of your")
        assert "was tested in the original game again" in sent[2][-1].content


def test_recorded_local_replies_replay_through_the_designer():
    labels = [label for label, call in PLANNED_CALLS.items() if call.game == "heist"]
    assert labels == [f"heist/initial/n4/set{s}" for s in range(3)]
    backend = backend_config("local")
    llm = CachedLLM("replay", DEFAULT_CACHE_DIR, backend)
    designer = EnvironmentDesigner(PromptOptions(game="heist", structured="json_object"), llm)
    parsed = designer.generate(4)
    assert all(isinstance(c, HeistConfig) for c in parsed.configs)
    assert len(parsed.configs) == 4
    assert llm.ledger.summary()["cache_hits"] == 1
