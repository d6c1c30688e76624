"""The design-quality measures read only cache entries: distinct worlds, out-of-range
values, and whether an adaptation moved toward the weakest skills."""

import json

import pytest

from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import EnvGenError
from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.llm.request import ChatRequest, ChatResponse, Message, Usage
from envgen.loop.world_designers import RECIPES
from envgen.report.design_quality import (
    main,
    measure_groups,
    reply_quality,
    run_keys,
    select,
    summarize,
    supports,
    weakest,
)
from envgen.scoring import ACHIEVEMENTS


def reply(*worlds):
    return json.dumps({"environments": [{"purpose": "p", **w} for w in worlds]})


IRON = {
    "environment_settings": {"target_biome": "mountain", "iron_rarity": "very_common",
                             "coal_rarity": "very_common"},
    "inventory_settings": {"stone_pickaxe": 1, "wood": 5, "coal": 2, "stone": 3},
}  # fmt: skip
LABEL = "crafter/initial/n2/set0"
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


def record(cache_dir, model, temperature, *worlds, label=LABEL):
    """Files a reply of `worlds` by `model` under `label` in `cache_dir`."""

    def client(backend):
        return lambda request: ChatResponse(reply(*worlds), model, Usage(5, 3), "stop", 1700000000)

    backend = backend_config("openai", model=model)
    llm = CachedLLM("fill", cache_dir, backend, client_factory=client)
    llm(ChatRequest((Message("user", label),), temperature, 0, 100, label=label))


def test_replies_are_measured_per_model_and_temperature(tmp_path):
    record(tmp_path, "m", 0.0, WOOD, WOOD)
    record(tmp_path, "m", 0.7, WOOD, IRON)
    record(tmp_path, "other", 0.7, IRON, IRON)
    groups = measure_groups(tmp_path)
    assert sorted(q.distinct for q in select(groups, "m", None)) == [1, 2]
    assert [q.distinct for q in select(groups, "m", 0.7)] == [2]
    assert [q.distinct for q in select(groups, "m", 0.0)] == [1]
    assert select(groups, "m", 1.0) == []
    # --runs: only the calls a run made (its llm_calls.json names their keys).
    keys = sorted(p.stem for p in tmp_path.glob("*.json"))
    run = tmp_path / "runs" / "abc" / "seed-0"
    run.mkdir(parents=True)
    (run / "llm_calls.json").write_text(json.dumps([{"key": keys[0]}]))
    assert len(run_keys([run.parent])) == 1
    assert sum(len(rows) for rows in measure_groups(tmp_path, run_keys([run])).values()) == 1
    with pytest.raises(EnvGenError, match="no llm_calls.json"):
        run_keys([tmp_path / "runs"])


def test_the_summary_counts_initial_sets_with_every_world_distinct(tmp_path, capsys):
    def quality(label, *worlds):
        entry = {"label": label, "request": {"messages": []}, "response": {"text": reply(*worlds)}}
        return reply_quality(entry)

    rows = [
        quality(LABEL, WOOD, IRON),
        quality("crafter/initial/n2/set1", WOOD, WOOD),
        quality("crafter/initial/n1/set0", WOOD),
    ]
    summary = summarize([q for q in rows if q is not None])
    assert (summary["initial_sets"], summary["initial_sets_all_distinct"]) == (2, 1)
    assert summary["initial_sets_all_distinct_after_redraw"] == 1
    assert summary["all_distinct"] == 2 and summary["adaptations"] == 0
    assert summary["distinct_of_n"] == {"2 of 2": 1, "1 of 2": 1, "1 of 1": 1}
    rows.append(quality("crafter/initial/n2/set1/redraw1", IRON, WOOD))  # repeats drawn again
    summary = summarize(rows)
    assert (summary["replies"], summary["initial_sets"]) == (4, 2)
    assert summary["initial_sets_all_distinct_after_redraw"] == 2
    # each set's distinct worlds, draw by draw; a re-ask answers for its draw
    unusable = {"label": "crafter/initial/n2/set1/redraw2", "response": {"text": "no json"}}
    rows.insert(0, reply_quality(unusable))
    rows.insert(0, quality("crafter/initial/n2/set1/redraw2/reask1", IRON, IRON))
    assert summarize(rows)["initial_set_distinct_by_draw"] == {
        "crafter/initial/n2/set0": [2],
        "crafter/initial/n2/set1": [1, 2, 1],
    }
    # by draw number, not by position: a draw without a usable reply, or without a reply
    # here (another run's), is None; an unusable re-ask leaves its draw unusable
    unusable_first = {"label": "crafter/initial/n2/set2", "response": {"text": "no json"}}
    unusable_reask = {"label": "crafter/initial/n2/set2/reask1", "response": {"text": "?"}}
    gaps = [
        reply_quality(unusable_first),
        reply_quality(unusable_reask),
        quality("crafter/initial/n2/set2/redraw2", IRON, WOOD),
        quality("crafter/initial/n2/set0/redraw1/reask1", WOOD, WOOD),  # after its draw's
    ]
    assert summarize(gaps + rows)["initial_set_distinct_by_draw"] == {
        "crafter/initial/n2/set0": [2, 1],
        "crafter/initial/n2/set1": [1, 2, 1],
        "crafter/initial/n2/set2": [None, None, 2],
    }
    with pytest.raises(SystemExit):
        main(["--cache-dir", str(tmp_path)])  # neither --model nor --out
    assert "--model" in capsys.readouterr().err
    assert main(["--cache-dir", str(tmp_path), "--out", str(tmp_path / "q.json")]) == 0
    assert json.loads((tmp_path / "q.json").read_text()) == {}


def test_heist_replies_are_measured_apart_from_crafter(tmp_path, capsys):
    maze = {"environment_settings": {"distribution_mode": "easy", "maze_size": 11},
            "inventory_settings": {"keys_held": 0}}  # fmt: skip
    small = {"environment_settings": {"maze_size": 5}, "inventory_settings": {}}
    entry = {"label": "heist/initial/n2/set0", "request": {"messages": []}}
    quality = reply_quality({**entry, "response": {"text": reply(maze, small)}})
    # 11 is clamped to easy mode's 9; each world offers 4 values (3 settings, 1 item).
    assert (quality.game, quality.distinct, quality.out_of_range, quality.values) == (
        "heist", 2, 1, 8,
    )  # fmt: skip
    assert quality.toward_weakness is None
    repeat = reply_quality({**entry, "response": {"text": reply(small, small)}})
    assert repeat.distinct == 1
    # --out: a summary per game; Crafter's keep their names.
    record(tmp_path, "m", 0.0, WOOD, IRON)
    record(tmp_path, "m", 0.0, maze, small, label="heist/initial/n2/set0")
    assert main(["--cache-dir", str(tmp_path), "--out", str(tmp_path / "q.json")]) == 0
    out = json.loads((tmp_path / "q.json").read_text())
    assert sorted(out) == ["heist: m @ temperature 0", "m @ temperature 0"]
    assert out["heist: m @ temperature 0"]["out_of_range"] == 1
    assert out["m @ temperature 0"]["out_of_range"] == 0
