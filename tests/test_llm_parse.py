"""Reply parsing: a corpus of broken replies each gets a clear outcome."""

import json
from pathlib import Path

import pytest

from envgen.envs.crafter.config import LLM_ENV_LENGTH
from envgen.errors import LLMResponseError
from envgen.llm.jsonish import JSONishError, loads
from envgen.llm.parse import parse_environments

CORPUS = Path(__file__).parent / "data" / "llm_replies"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
MB = 1024 * 1024


def _outcome(text: str, n: int, obfuscated: bool = False) -> tuple[str, str]:
    """("ok", warnings) or ("error", message); any other exception fails the test."""
    try:
        parsed = parse_environments(text, n, obfuscated=obfuscated)
    except LLMResponseError as exc:
        return "error", str(exc)
    assert len(parsed.configs) == n
    return "ok", "\n".join(parsed.warnings)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_reply_has_a_clear_outcome(name):
    case = EXPECTED[name]
    text = (CORPUS / name.split("#")[0]).read_text()
    outcome, message = _outcome(text, case["n"], case.get("obfuscated", False))
    assert outcome == case["outcome"], message
    assert case["match"] in message


def test_corpus_covers_every_file():
    files = {p.name for p in CORPUS.glob("*.txt")}
    assert files == {name.split("#")[0] for name in EXPECTED}


GOOD_4 = (CORPUS / "three_of_four.txt").read_text().replace("desert", "beaches")


@pytest.mark.parametrize(
    "text, outcome",
    [
        (GOOD_4 + "lorem ipsum {[' \" " * (MB // 19), "ok"),
        ('```json\n{"purpose": "' + "x" * MB + '"}\n```', "error"),
        ('```json\n{"inventory_settings": {"wood": ' + "9" * MB + "}}\n```", "error"),
        ("[" * MB, "error"),
        ('{"a":' * (MB // 5), "error"),
        ("{}" * (MB // 2), "ok"),
        ('"' * MB, "error"),
    ],
    ids=["prose", "string", "digits", "brackets", "nesting", "empties", "quotes"],
)
def test_one_megabyte_replies(text, outcome):
    assert _outcome(text, 4)[0] == outcome


def test_purpose_lines_attach_to_their_blocks():
    configs = parse_environments(GOOD_4, 4).configs
    assert [c.purpose for c in configs] == ["wood and tables", "stone tools", "a beaches", "iron"]
    assert all(c.length == LLM_ENV_LENGTH for c in configs)
    assert configs[2].target_biome == "beaches"


def test_obfuscated_names_map_back():
    text = (CORPUS / "obfuscated.txt").read_text()
    (config,) = parse_environments(text, 1, obfuscated=True).configs
    assert config.target_biome == "mountain"  # optionC
    assert config.iron_rarity == "very_common"  # parameter3 = optionE
    assert dict(config.inventory) == {"wood": 4, "iron": 1, "stone_pickaxe": 1}


def test_unknown_game_is_named():
    with pytest.raises(Exception, match="unknown game 'minecraft'; known: crafter, heist"):
        parse_environments("{}", 1, game="minecraft")


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"a": 1,}', {"a": 1}),
        ("{'a': 'it''s'}", None),
        ("{'a': \"don't\", /* x */ 'b': [True, None,],}", {"a": "don't", "b": [True, None]}),
        ('{"u": "http://x//y", "c": "/* keep */"} // end', {"u": "http://x//y", "c": "/* keep */"}),
    ],
)
def test_lenient_json(text, value):
    if value is None:
        with pytest.raises(JSONishError):
            loads(text)
    else:
        assert loads(text) == (value, True)
