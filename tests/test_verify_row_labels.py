"""`envgen verify` re-derives a not_recorded or llm_unusable row's label and reason from
the LLM response cache (`envgen.evidence.verify_plan`): a not_recorded row relabelled
`llm_unusable` with an invented reason passed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envgen.evidence.checks import CACHE_DIR, _runs_json_differences
from envgen.evidence.verify_plan import label_problem
from envgen.llm.cache import ResponseCache

ROW = "update every 0.012M (40 cycles)"  # table3's not_recorded row
# A recorded reply the 135M model gave that no parse can use (it was re-asked)
UNUSABLE_KEY = next(p.stem for p in CACHE_DIR.glob("17d7570ff67719ba*.json"))
UNUSABLE = {
    "row": "PPO + EnvGen",
    "game": "crafter",
    "config_hash": "0123456789ab",
    "designer": "llm:smollm2-135m-instruct",
    "status": "llm_unusable",
    "reason": "2 of 2 run(s) llm_unusable: crafter/adapt2/n8/set0: expected 8 environment(s), "
    "found 0 usable:",
}


def _table3(tmp_path: Path, edit=None) -> Path:
    path = tmp_path / "table3" / "runs.json"
    path.parent.mkdir()
    table = json.loads(Path("results/table3/runs.json").read_text())
    if edit:
        edit(next(r for r in table["rows"] if r["row"] == ROW))
    path.write_text(json.dumps(table))
    return path


def test_a_not_recorded_row_relabelled_unusable_with_an_invented_reason_is_named(tmp_path):
    assert _runs_json_differences(_table3(tmp_path), False) is None

    def relabel(row):
        row["status"] = "llm_unusable"
        row["reason"] = "2 of 2 run(s) llm_unusable: crafter/adapt19/n4/set0: the reply was empty"

    shutil.rmtree(tmp_path / "table3")
    problem = _runs_json_differences(_table3(tmp_path, relabel), False)
    assert problem is not None and f"row {ROW!r}: llm_unusable at call" in problem, problem
    assert "holds no reply" in problem


def test_an_unusable_label_stands_on_its_recorded_reply_and_its_words():
    cache = ResponseCache(CACHE_DIR)
    assert label_problem(UNUSABLE, cache) is None
    forged = {**UNUSABLE, "reason": UNUSABLE["reason"].replace("found 0", "found 3")}
    assert "holds no reply" in label_problem(forged, cache)
    other = {**UNUSABLE, "designer": "llm:qwen2.5-coder-1.5b-instruct"}
    assert "holds no reply of 'qwen2.5-coder-1.5b-instruct'" in label_problem(other, cache)


def _miss(**change: str) -> dict:
    """A not_recorded row of UNUSABLE's designer whose reason is a cache miss."""
    miss = {
        "key": "0" * 64,
        "model": "smollm2-135m-instruct",
        "slot": "0123456789ab/seed-0/crafter/adapt2/n8/set0",
        "status": "not_recorded",
    } | change
    return {
        **UNUSABLE,
        "status": miss["status"],
        "reason": f"2 of 2 run(s) {miss['status']}: no recorded reply for model "
        f"{miss['model']!r}, call 'crafter/adapt2/n8/set0', slot {miss['slot']}, request key "
        f"{miss['key']} in data/llm_cache (replay mode never calls the network).",
    }


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"key": UNUSABLE_KEY}, "holds the reply to request key"),
        ({"model": "gpt-4-1106-preview"}, "for model 'gpt-4-1106-preview'; the row's designer"),
        ({"slot": "ffffffffffff/seed-0/crafter/adapt2/n8/set0"}, "not a slot of this row's call"),
        ({"status": "llm_unusable"}, "names no call that gave up"),
    ],
)
def test_a_not_recorded_reason_must_be_a_miss_of_this_row_that_holds(change, words):
    cache = ResponseCache(CACHE_DIR)
    assert label_problem(_miss(), cache) is None
    assert words in (label_problem(_miss(**change), cache) or "")
