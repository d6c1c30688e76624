"""Prompts come from the game and config tables; the designer keeps the conversation."""

import json
import re
from pathlib import Path

import crafter.constants
import pytest

from envgen.envs.crafter.config import BIOMES, ENV_FIELDS, INVENTORY_MAX, RARITIES
from envgen.errors import ConfigError, LLMResponseError
from envgen.llm import crafter as crafter_prompts
from envgen.llm.conversation import (
    AUTO,
    REASK_TOKENS,
    REDRAW_SEED_STRIDE,
    REDRAWS,
    EnvironmentDesigner,
    PromptOptions,
    base_label,
    context_window,
    fitting_exchanges,
    max_tokens,
    token_bound,
)
from envgen.llm.request import ChatResponse, Message, Usage
from envgen.llm.schema import reply_schema

GOOD = (
    '```json\n{"environment_settings": {"target_biome": "mountain"}, '
    '"inventory_settings": {"wood": 2}}\n```'
)
STATS = {name: (12.34, 4.6) for name in crafter.constants.achievements}


class Scripted:
    """An LLMCallable answering the given texts in turn; keeps the requests it got."""

    def __init__(self, *texts: str):
        self.texts = list(texts)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        return ChatResponse(self.texts.pop(0), "scripted", Usage(1, 1), "stop", 0)


def test_initial_prompt_lists_skills_parameters_and_format():
    prompt = crafter_prompts.PROMPTS.initial_prompt(4, crafter_prompts.name_map(False), False)
    for skill in crafter.constants.achievements:
        assert f"- {skill}\n" in prompt
    for field, allowed in ENV_FIELDS.items():
        assert f"- {field}: one of {', '.join(allowed)}" in prompt
    for item, hi in INVENTORY_MAX.items():
        assert f"- {item}: integer 0-{hi}" in prompt
    assert "Create 4 environments" in prompt and "```json" in prompt
    assert set(crafter_prompts.PARAMETER_NOTES) == set(ENV_FIELDS)


def test_obfuscated_prompt_and_schema_hide_parameter_names():
    names = crafter_prompts.name_map(True)
    prompt = crafter_prompts.PROMPTS.initial_prompt(4, names, True)
    parameters = prompt[prompt.index("Parameters") : prompt.index("Game rules")]
    schema = json.dumps(crafter_prompts.environment_schema(names))
    for real in (*ENV_FIELDS, *BIOMES, *RARITIES, *INVENTORY_MAX):
        assert not re.search(rf"\b{real}\b", parameters), real
        assert f'"{real}"' not in schema, real
    assert "parameter5" in parameters and "optionG" in parameters and "item12" in parameters


def test_reply_schema_asks_for_exactly_n():
    names = crafter_prompts.name_map(False)
    schema = reply_schema(crafter_prompts.environment_schema(names), 8, explain=True)
    envs = schema["properties"]["environments"]
    assert envs["minItems"] == envs["maxItems"] == 8
    assert schema["required"] == ["information_used", "environments"]
    inventory = envs["items"]["properties"]["inventory_settings"]["properties"]
    assert inventory["iron_sword"]["enum"] == [0, 1]


def test_temperature_is_sent_with_the_initial_set_as_seed_and_checked():
    llm = Scripted(GOOD, GOOD)
    designer = EnvironmentDesigner(PromptOptions(initial_set=1, temperature=0.7), llm)
    designer.generate(1)
    designer.adapt(STATS)
    assert [(r.temperature, r.seed) for r in llm.requests] == [(0.7, 1), (0.7, 1)]
    for bad in (-0.1, 2.5, float("nan"), True, "0.7"):
        with pytest.raises(ConfigError, match="temperature"):
            PromptOptions(temperature=bad)


def test_conversation_reask_and_adaptation():
    llm = Scripted("no json here", GOOD, GOOD)
    designer = EnvironmentDesigner(PromptOptions(initial_set=2), llm)
    first = designer.generate(1)
    assert first.configs[0].target_biome == "mountain"
    assert [r.reask for r in llm.requests] == [False, True]
    assert {r.seed for r in llm.requests} == {2} and {r.temperature for r in llm.requests} == {0}
    assert "could not be used" in llm.requests[1].messages[-1].content
    assert llm.requests[1].label == "crafter/initial/n1/set2/reask1"

    designer.adapt(STATS)
    adapt = llm.requests[-1]
    assert [m.role for m in adapt.messages] == ["user"]  # the first adaptation stands alone
    prompt = adapt.messages[-1].content
    assert "- collect_coal: 12% +/- 5%" in prompt  # whole percent, as the authors round
    assert '"target_biome": "mountain"' in prompt and "which of the information" in prompt
    assert prompt.startswith(crafter_prompts.PROMPTS.briefing(crafter_prompts.name_map(False)))
    assert adapt.label == "crafter/adapt2/n1/set2" and len(designer.results) == 2


def test_adaptations_follow_the_authors_layout():
    """adaptK sends 2K-3 messages: the first adaptation, then (reply, results) pairs; a
    failed reply and its re-ask stay out of later requests."""
    llm = Scripted(GOOD, GOOD, "no json here", GOOD, GOOD, GOOD)
    designer = EnvironmentDesigner(PromptOptions(), llm)
    designer.generate(1)
    for _ in range(4):
        designer.adapt(STATS)
    sent = {r.label: r.messages for r in llm.requests}
    for k in (2, 3, 4, 5):
        assert len(sent[f"crafter/adapt{k}/n1/set0"]) == 2 * k - 3
    assert len(sent["crafter/adapt3/n1/set0/reask1"]) == 5  # within its own cycle only
    adapt5 = sent["crafter/adapt5/n1/set0"]
    assert [m.role for m in adapt5] == ["user", "assistant"] * 3 + ["user"]
    assert adapt5[0] == sent["crafter/adapt2/n1/set0"][0]
    assert all("could not be used" not in m.content for m in adapt5)
    assert adapt5[-1].content.startswith("The agent trained in the environments of your last")
    assert "- wake_up: 12% +/- 5%" in adapt5[-1].content and "```json" not in adapt5[-1].content


def _worlds(*biomes: str) -> str:
    blocks = [
        f'```json\n{{"environment_settings": {{"target_biome": "{b}"}}, '
        '"inventory_settings": {"wood": 2}, "purpose": "p%d"}\n```' % i
        for i, b in enumerate(biomes)
    ]
    return "\n".join(blocks)


def test_repeated_initial_worlds_are_drawn_again_alone_with_another_seed():
    """Worlds that differ only in their purpose line repeat; the redraw sends the same
    request, without the repeating reply, seeded apart from every other set's draws."""
    repeating = _worlds("mountain", "mountain", "grassland", "mountain")
    distinct = _worlds("mountain", "grassland", "beaches", "natural")
    llm = Scripted(repeating, distinct)
    designer = EnvironmentDesigner(PromptOptions(initial_set=2, redraw_repeats=True), llm)
    got = designer.generate(4)
    assert [c.target_biome for c in got.configs] == ["mountain", "grassland", "beaches", "natural"]
    first, redraw = llm.requests
    assert redraw.label == "crafter/initial/n4/set2/redraw1" and not redraw.reask
    assert redraw.messages == first.messages
    assert (first.seed, redraw.seed) == (2, 2 + REDRAW_SEED_STRIDE)
    assert [m.role for m in designer.messages] == ["user", "assistant", "assistant"]
    # The first adaptation shows the worlds that were used.
    llm.texts.append(distinct)
    designer.adapt(STATS)
    assert '"target_biome": "beaches"' in llm.requests[-1].messages[0].content


def test_redraws_stop_at_distinct_worlds_or_keep_the_draw_with_fewest_repeats():
    worse = _worlds("mountain", "mountain", "mountain")
    better = _worlds("mountain", "grassland", "grassland")
    other = _worlds("beaches", "beaches", "beaches")
    distinct = _worlds("mountain", "grassland", "beaches")
    for replies, expected, draws in (
        ((better, worse, worse, worse), ["mountain", "grassland", "grassland"], 4),
        ((worse, other, better, worse), ["mountain", "grassland", "grassland"], 4),
        ((worse, other, worse, other), ["mountain"] * 3, 4),  # the earliest of equals
        ((worse, distinct), ["mountain", "grassland", "beaches"], 2),  # stops there
    ):
        llm = Scripted(*replies)
        designer = EnvironmentDesigner(PromptOptions(redraw_repeats=True), llm)
        assert [c.target_biome for c in designer.generate(3).configs] == expected
        assert len(llm.requests) == draws == 1 + min(REDRAWS, len(replies) - 1)
        assert [r.seed for r in llm.requests] == [k * REDRAW_SEED_STRIDE for k in range(draws)]


def test_an_unusable_redraw_is_reasked_within_its_draw_and_then_spent():
    worse = _worlds("mountain", "mountain")
    llm = Scripted(worse, "no json here", "still none", worse, _worlds("mountain", "beaches"))
    designer = EnvironmentDesigner(PromptOptions(redraw_repeats=True), llm)
    assert [c.target_biome for c in designer.generate(2).configs] == ["mountain", "beaches"]
    labels = [r.label for r in llm.requests]
    assert labels == [
        "crafter/initial/n2/set0",
        "crafter/initial/n2/set0/redraw1",
        "crafter/initial/n2/set0/redraw1/reask1",
        "crafter/initial/n2/set0/redraw2",
        "crafter/initial/n2/set0/redraw3",
    ]
    assert base_label(labels[2]) == labels[0]
    assert llm.requests[2].reask and llm.requests[2].seed == REDRAW_SEED_STRIDE


def test_redraws_keep_the_first_of_equal_improvements_and_pin_the_seed_rule():
    worse = _worlds("mountain", "mountain", "mountain")
    better = _worlds("mountain", "grassland", "grassland")
    other = _worlds("beaches", "natural", "natural")
    llm = Scripted(worse, better, other, worse)
    designer = EnvironmentDesigner(PromptOptions(initial_set=3, redraw_repeats=True), llm)
    assert [c.target_biome for c in designer.generate(3).configs] == [
        "mountain",
        "grassland",
        "grassland",
    ]
    assert [r.seed for r in llm.requests] == [3, 1003, 2003, 3003]
    with pytest.raises(ConfigError, match="below 1000"):
        PromptOptions(initial_set=REDRAW_SEED_STRIDE, redraw_repeats=True)
    PromptOptions(initial_set=REDRAW_SEED_STRIDE)  # no redraws, no shared seeds


def test_unusable_redraws_leave_the_first_draw_and_the_conversation_as_without_them():
    repeating = _worlds("mountain", "mountain")
    plain = Scripted(repeating, repeating, repeating)
    without = EnvironmentDesigner(PromptOptions(), plain)
    llm = Scripted(repeating, *["no json here"] * 2 * REDRAWS, repeating, repeating)
    designer = EnvironmentDesigner(PromptOptions(redraw_repeats=True), llm)
    for d in (without, designer):
        assert [c.target_biome for c in d.generate(2).configs] == ["mountain"] * 2
        d.adapt(STATS)
        d.adapt(STATS)
    assert len(llm.requests) == 1 + 2 * REDRAWS + 2
    assert [m.role for m in designer.messages].count("user") == 1 + REDRAWS + 2
    assert llm.requests[-1].messages == plain.requests[-1].messages  # adapt3's history


def test_an_unusable_first_reply_is_reasked_not_redrawn():
    llm = Scripted("no json here", _worlds("mountain", "beaches"))
    designer = EnvironmentDesigner(PromptOptions(redraw_repeats=True, max_reasks=1), llm)
    designer.generate(2)
    assert [r.label for r in llm.requests] == [
        "crafter/initial/n2/set0",
        "crafter/initial/n2/set0/reask1",
    ]
    assert "could not be used" in llm.requests[1].messages[-1].content


def test_repeats_are_used_as_they_are_by_default_and_in_adaptations():
    repeating = _worlds("mountain", "mountain")
    llm = Scripted(repeating, repeating)
    designer = EnvironmentDesigner(PromptOptions(), llm)
    assert len(designer.generate(2).configs) == 2 and len(llm.requests) == 1
    llm = Scripted(_worlds("mountain", "grassland"), repeating)
    designer = EnvironmentDesigner(PromptOptions(redraw_repeats=True), llm)
    designer.generate(2)
    designer.adapt(STATS)  # adaptations are not drawn again for repeats
    assert len(llm.requests) == 2


def test_rules_state_both_sleep_facts():
    rules = " ".join(crafter_prompts.GAME_RULES)
    assert '"wake_up" needs the agent to sleep first' in rules
    assert "woken by monsters or by sunrise" in rules


def test_gives_up_after_max_reasks_with_the_reason():
    designer = EnvironmentDesigner(PromptOptions(max_reasks=0), Scripted("{}"))
    expected = r"(?s)crafter/initial/n2/set0: expected 2 .*after 0 re-ask"
    with pytest.raises(LLMResponseError, match=expected):
        designer.generate(2)


def test_bad_use_is_reported():
    designer = EnvironmentDesigner(PromptOptions(), Scripted(GOOD))
    with pytest.raises(RuntimeError, match="generate"):
        designer.adapt(STATS)
    designer.generate(1)
    with pytest.raises(ConfigError, match="success_stats.collect_gold: unknown skill"):
        designer.adapt({**STATS, "collect_gold": (1.0, 0.0)})
    with pytest.raises(ConfigError, match="missing skills wake_up"):
        designer.adapt({k: v for k, v in STATS.items() if k != "wake_up"})
    with pytest.raises(ConfigError, match="structured"):
        PromptOptions(structured="xml")


def test_obfuscated_reask_speaks_obfuscated_names():
    bad = '```json\n{"environment_settings": {"parameter1": "optionF"}}\n```'
    good = '```json\n{"environment_settings": {"parameter1": "optionC"}}\n```'
    llm = Scripted(bad, good)
    parsed = EnvironmentDesigner(PromptOptions(obfuscate=True), llm).generate(1)
    assert parsed.configs[0].target_biome == "mountain"
    reask = llm.requests[1].messages[-1].content
    assert "parameter1: 'optionF' is not allowed; allowed values: optionA" in reask
    assert "target_biome" not in reask and "natural" not in reask


@pytest.mark.parametrize("keep", [0, 1, 2])
def test_bounded_history_keeps_first_and_last_adaptations(keep):
    llm = Scripted(*[GOOD] * 7)
    designer = EnvironmentDesigner(PromptOptions(history_cycles=keep), llm)
    designer.generate(1)
    for _ in range(6):
        designer.adapt(STATS)
    sent = [len(r.messages) for r in llm.requests]
    full = [1, 1, 3, 5, 7, 9, 11]  # initial, then adaptK with 2K-3 messages
    if keep == 0:
        assert sent == full  # the authors': the whole adaptation history
    else:
        cap = 2 + 2 * keep + 1  # first adaptation, `keep` later ones, the new message
        assert sent == [min(n, cap) for n in full]
        last = llm.requests[-1].messages
        assert last[:2] == (designer.messages[2], designer.messages[3])
        assert last[-1] == designer.messages[-2]  # the newest prompt, before its reply


def test_obfuscated_adaptations_follow_the_authors_layout_and_hide_names():
    """The obfuscated prompt (Table 6's ablation) keeps the layout: adaptK sends 2K-3
    messages, the first self-contained; no message names a real parameter, and the worlds
    shown carry no real option name (the game rules still speak of grassland)."""
    good = '```json\n{"environment_settings": {"parameter1": "optionC"}}\n```'
    llm = Scripted(*[good] * 4)
    designer = EnvironmentDesigner(PromptOptions(obfuscate=True), llm)
    designer.generate(1)
    for _ in range(3):
        designer.adapt(STATS)
    sent = {r.label: r.messages for r in llm.requests}
    for k in (2, 3, 4):
        assert len(sent[f"crafter/adapt{k}/n1/obfuscated/set0"]) == 2 * k - 3
    adapt4 = sent["crafter/adapt4/n1/obfuscated/set0"]
    assert [m.role for m in adapt4] == ["user", "assistant", "user", "assistant", "user"]
    first = adapt4[0].content
    assert first.startswith(crafter_prompts.PROMPTS.briefing(crafter_prompts.name_map(True)))
    assert '"parameter1": "optionC"' in first and "- collect_coal: 12% +/- 5%" in first
    assert adapt4[-1].content.startswith("The agent trained in the environments of your last")
    for message in adapt4:
        for field in ENV_FIELDS:
            assert not re.search(rf"\b{field}\b", message.content), field
        for block in re.findall(r"```json(.*?)```", message.content, re.S):
            for option in (*BIOMES, *RARITIES):
                assert f'"{option}"' not in block, option


def _auto_designer(context: int | None, cycles: int) -> tuple[EnvironmentDesigner, Scripted]:
    llm = Scripted(*[GOOD] * (cycles + 1))
    options = PromptOptions(history_cycles=AUTO, context_tokens=context)
    designer = EnvironmentDesigner(options, llm)
    designer.generate(1)
    for cycle in range(cycles):  # rates that differ by cycle, so no two exchanges match
        designer.adapt({name: (mean + cycle, std) for name, (mean, std) in STATS.items()})
    return designer, llm


def _room(context: int) -> int:
    """What "auto" leaves for the messages: the reply budget and a re-ask's room kept."""
    return context - max_tokens(1) - PromptOptions().max_reasks * (max_tokens(1) + REASK_TOKENS)


def test_auto_history_keeps_a_short_conversation_whole():
    _, llm = _auto_designer(context_window("qwen2.5-coder-1.5b-instruct"), 6)
    assert [len(r.messages) for r in llm.requests] == [1, 1, 3, 5, 7, 9, 11]


def test_auto_history_drops_old_exchanges_in_blocks_so_requests_share_their_start():
    _, whole = _auto_designer(10**6, 16)
    adapt9 = whole.requests[8].messages  # 15 messages: the whole history of cycle 9
    context = token_bound(adapt9) + (10**6 - _room(10**6))  # adapt9 just fits
    designer, llm = _auto_designer(context, 16)
    sent = [r.messages for r in llm.requests]
    assert [len(m) for m in sent[:9]] == [len(r.messages) for r in whole.requests[:9]]
    assert all(token_bound(m) <= _room(context) for m in sent)
    first = (designer.messages[2], designer.messages[3])  # adapt2's exchange
    assert all(m[:2] == first for m in sent[3:])
    drops = [i for i in range(9, len(sent)) if sent[i][: len(sent[i - 1])] != sent[i - 1]]
    assert drops[0] == 9 and len(drops) >= 2, drops  # the window moved, then again
    for i in range(10, len(sent)):
        if i not in drops:  # the request before, its reply, then the new prompt
            assert sent[i][:-2] == sent[i - 1] and len(sent[i]) == len(sent[i - 1]) + 2
    for i in drops:  # the window left takes at most half the room the rest leaves
        window = sent[i][2:-1]
        left = _room(context) - token_bound([*first, sent[i][-1]])
        assert 0 < token_bound(window) <= left // 2
        assert token_bound([*sent[i - 1], *sent[i][-2:]]) > _room(context)  # had to move
    with pytest.raises(ConfigError, match="alone exceed"):
        _auto_designer(token_bound(adapt9[:1]) + (10**6 - _room(10**6)) - 1, 2)


def test_auto_history_keeps_the_newest_exchange_while_it_fits_though_it_outgrows_half():
    first = (Message("user", "a" * 200), Message("assistant", "b" * 200))
    later = [(Message("user", f"r{i}" * 50), Message("assistant", "d" * 3000)) for i in range(4)]
    prompt = Message("user", "p" * 100)
    base, one = token_bound([*first, prompt]), token_bound(list(later[0]))
    room = base + one * 3 // 2  # one later exchange fits, two do not, one is over half
    for k in range(1, 5):
        assert fitting_exchanges([first, *later[:k]], prompt, room) == [first, later[k - 1]]
    assert fitting_exchanges([first, *later[:2]], prompt, base + one - 1) == [first]  # none fits


def test_auto_history_needs_a_known_context_and_the_bound_holds_on_every_cached_request():
    with pytest.raises(ConfigError, match="known for the local models only"):
        PromptOptions(history_cycles=AUTO, context_tokens=None)
    with pytest.raises(ConfigError, match="whole number >= 0"):
        PromptOptions(history_cycles="often")
    counted: dict[str, int] = {}
    longest: dict[str, int] = {}
    for path in sorted(Path("data/llm_cache").glob("*.json")):
        entry = json.loads(path.read_text())
        messages = [Message(m["role"], m["content"]) for m in entry["request"]["messages"]]
        tokens = entry["response"]["usage"]["prompt_tokens"]  # the server's own count
        assert token_bound(messages) >= tokens, path
        model = entry["request"]["model"]
        counted[model] = counted.get(model, 0) + 1
        longest[model] = max(longest.get(model, 0), tokens)
    # both local models' tokenizers, each over many requests and prompts of 5,000+ tokens
    assert set(counted) >= {"smollm2-135m-instruct", "qwen2.5-coder-1.5b-instruct"}
    assert min(counted.values()) >= 50 and min(longest.values()) >= 5_000, (counted, longest)


def test_a_run_option_of_auto_is_its_own_config_and_a_wrong_word_is_named():
    from envgen.loop.config import RunConfig
    from envgen.loop.runner import designer_options

    auto = RunConfig(llm_history_cycles=AUTO, llm_model="qwen2.5-coder-1.5b-instruct")
    assert auto.config_hash() != auto.replace(llm_history_cycles=0).config_hash()
    assert designer_options(auto, "off").context_tokens == 32768
    api = auto.replace(llm_model="gpt-4-1106-preview")  # no stated context
    with pytest.raises(ConfigError, match="auto fits the model's context"):
        designer_options(api, "off")
    fixed = designer_options(api.replace(method="fixed"), "off")  # never adapts: no history
    assert (fixed.history_cycles, fixed.context_tokens) == (0, None)
    with pytest.raises(ConfigError, match="llm_history_cycles: 'often'"):
        RunConfig.from_dict({"llm_history_cycles": "often"})
