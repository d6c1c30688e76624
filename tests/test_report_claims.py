"""CLAIMS.md from hand-made runs.json files: banner, verdicts, missing rows, accounting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from envgen.errors import ReportInputError
from envgen.report import claims_md
from envgen.report.inputs import load_tables
from envgen.report.notes import MAX_CELL, Notes
from envgen.report.select import arms_by_label
from envgen.stats.paper_claims import PAPER_CLAIMS
from tests.test_report_tables import row, run, table, write

REPO = Path(__file__).resolve().parents[1]
ENVGEN_SCORES = [33.0, 32.0, 31.5, 32.5, 33.5, 31.0, 32.2, 32.8, 31.8, 33.2]
CRAFTER_SCORES = [26.0, 25.0, 27.5, 26.5, 24.5, 26.8, 27.0, 25.5, 26.2, 25.8]


def two_rows(tmp_path: Path, profile: str) -> list[Path]:
    envgen = [run(i, s, run_dir=str(tmp_path / "envgen")) for i, s in enumerate(ENVGEN_SCORES)]
    crafter = [run(i, s, run_dir=str(tmp_path / "crafter")) for i, s in enumerate(CRAFTER_SCORES)]
    table4 = table(
        "table4",
        [
            row("1.96M Crafter only", runs=crafter, config_hash="crafter"),
            row("0.48M EnvGen + 1.48M Crafter", runs=envgen, config_hash="envgen"),
            row("1.24M Crafter only", "failed", reason="worker died; rerun `make repro`"),
        ],
        profile,
    )
    table1 = table(
        "table1",
        [
            # same runs and config, another label
            row("PPO + 0.96M Crafter pretraining", runs=crafter, config_hash="crafter"),
            row("PPO + EnvGen", runs=envgen, config_hash="envgen"),
        ],
        profile,
    )
    return [write(tmp_path, table1), write(tmp_path, table4)]


def claim_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {name} |"))


def note_of(text: str, line: str) -> str:
    """The numbered note a table line points to (notes follow their table)."""
    number = line.split("(note ", 1)[1].split(")", 1)[0]
    lines = text.splitlines()
    below = lines[lines.index(line) :]
    return next(n for n in below if n.startswith(f"{number}. "))


def test_smoke_profile_has_the_banner_and_only_inconclusive_verdicts(tmp_path: Path):
    text = claims_md.claims_markdown(load_tables(two_rows(tmp_path, "smoke")))
    assert f"> **{claims_md.SMOKE_BANNER}.**" in text
    assert "is not smoke-scale" not in text  # no campaign given: no pointer to one
    first = claim_line(text, PAPER_CLAIMS[0].name)
    assert "**inconclusive**" in first and "profile 'smoke' is not claim-grade" in first
    assert "(10)" in first  # runs counted once although two tables list them
    for claim in PAPER_CLAIMS:
        claim_line(text, claim.name)  # every claim has a line
    missing = claim_line(text, "Table 4: EnvGen > Crafter-only at 1.24M steps")
    assert "not run" in missing
    assert "'1.24M Crafter only': failed in table4 (worker died; rerun `make repro`)" in missing
    assert "'0.12M EnvGen + 1.12M Crafter': in no table given to the report" in missing


def test_paper_profile_reproduces_a_clear_difference(tmp_path: Path):
    text = claims_md.claims_markdown(load_tables(two_rows(tmp_path, "paper")))
    assert claims_md.SMOKE_BANNER not in text
    first = claim_line(text, PAPER_CLAIMS[0].name)
    assert "**reproduced**" in first
    diff = np.mean(ENVGEN_SCORES) - np.mean(CRAFTER_SCORES)
    assert f"| {diff:+.2f} [" in first and "| +5.80 |" in first


def test_llm_accounting_per_run(tmp_path: Path):
    paths = two_rows(tmp_path, "smoke")
    for seed, calls in enumerate([4] * 5 + [6] * 5):
        run_dir = tmp_path / "envgen" / f"seed-{seed}"
        run_dir.mkdir(parents=True)
        accounting = {
            "calls": calls,
            "prompt_tokens": 1000 * calls,
            "completion_tokens": 100,
            "cost_usd": 0.01 * calls,
            "models": {"gpt-4-1106-preview": {}},
        }
        (run_dir / "llm_accounting.json").write_text(json.dumps(accounting))
    text = claims_md.claims_markdown(load_tables(paths))
    assert "about $0.15 per run" in text and "under $1" not in text
    assert "| PPO + EnvGen | 10 | 5.0 | 5000.0 | 100.0 | 0.0500 | gpt-4-1106-preview |" in text
    assert "| 1.96M Crafter only |" not in text.split("## LLM use")[1]  # no LLM, no line


def test_mixed_profiles_are_not_claim_grade(tmp_path: Path):
    paths = two_rows(tmp_path, "paper")
    data = json.loads(paths[1].read_text())
    data["profile"] = "smoke"
    paths[1].write_text(json.dumps(data))
    tables = load_tables(paths)
    assert claims_md.profile_of(tables) == "mixed (paper, smoke)"
    assert claims_md.SMOKE_BANNER in claims_md.claims_markdown(tables)


def test_cli_writes_the_file(tmp_path: Path):
    paths = two_rows(tmp_path, "smoke")
    out = tmp_path / "results" / "CLAIMS.md"
    assert claims_md.main([*map(str, paths), "--out", str(out)]) == 0
    assert out.read_text().startswith("# The paper's claims, measured")


def test_a_label_with_two_configs_is_refused(tmp_path: Path):
    """Two runs each of two configs under one label: an error, never a pooled arm of 4."""
    one = [run(i, 30.0, run_dir=str(tmp_path / "gpt4")) for i in range(2)]
    two = [run(i, 31.0, run_dir=str(tmp_path / "smol")) for i in range(2)]
    t2 = table("table2", [row("Fixed (no curriculum)", runs=one, config_hash="gpt4")])
    t4 = table("table4", [row("1.96M Crafter only", runs=two, config_hash="smol")])
    t1 = table("table1", [row("PPO + 0.96M Crafter pretraining", runs=two, config_hash="other")])
    with pytest.raises(ReportInputError, match="an arm is one configuration"):
        arms_by_label(load_tables([write(tmp_path, t2), write(tmp_path, t4), write(tmp_path, t1)]))


def test_gpt4_fixed_is_its_own_arm_not_table2_fixed(tmp_path: Path):
    fixed = [run(i, 29.0 + i, run_dir=str(tmp_path / "fixed")) for i in range(2)]
    gpt4 = [run(i, 20.0 + i, run_dir=str(tmp_path / "gpt4")) for i in range(2)]
    t2 = table("table2", [row("Fixed (no curriculum)", runs=fixed, config_hash="smol")])
    t5 = table("table5", [row("GPT-4-Turbo (fixed)", runs=gpt4, config_hash="gpt4")])
    arms = arms_by_label(load_tables([write(tmp_path, t2), write(tmp_path, t5)]))
    assert arms["Fixed (no curriculum)"].config_hash == "smol"
    assert arms["GPT-4-Turbo (fixed)"].config_hash == "gpt4"
    assert len(arms["GPT-4-Turbo (fixed)"].runs) == 2


def test_claims_md_flags_repeats_one_config_and_untestable_figures(tmp_path: Path):
    def runs(name: str, score: float, steps: int) -> list[dict]:
        return [
            {**run(i, score + i, run_dir=str(tmp_path / name)), "global_steps": steps}
            for i in range(2)
        ]

    envgen = runs("envgen", 2.0, 9216)
    ratio = runs("ratio", 2.2, 11264)
    t7 = table(
        "table7",
        [
            row("ratio 5:1", runs=ratio, config_hash="ratio"),
            row("ratio 2:1", runs=ratio, config_hash="ratio"),
            row("ratio 1:1", runs=envgen, config_hash="envgen"),
        ],
    )
    t1 = table(
        "table1",
        [
            row("PPO + EnvGen", runs=envgen, config_hash="envgen"),
            row("PPO + 0.96M Crafter pretraining", runs=runs("crafter", 1.0, 9216)),
        ],
    )
    text = claims_md.claims_markdown(load_tables([write(tmp_path, t1), write(tmp_path, t7)]))
    second = claim_line(text, "Table 7: PPO + EnvGen > ratio 2:1")
    assert "FLAG: tests the same runs as 'Table 7: PPO + EnvGen > ratio 5:1'" in second
    assert "FLAG: unequal budgets, 9,216 vs 11,264 steps per run" in second
    first = claim_line(text, "Table 7: PPO + EnvGen > ratio 5:1")
    assert "same runs" not in first
    iron = claim_line(text, "Figure 4: EnvGen > Crafter-only, collect_iron success")
    assert "+37.00 (approx.)" in iron
    sword = claim_line(text, "Figure 5: EnvGen unlocks make_iron_sword earlier than Crafter-only")
    assert "not tested" in sword and "| untestable (note " in sword
    assert "never unlocked make_iron_sword" in note_of(text, sword)


def table_cells(line: str) -> list[str]:
    """The cells of one Markdown table line (escaped pipes stay inside their cell)."""
    body = line.strip()[1:-1].replace("\\|", "\0")
    return [cell.strip().replace("\0", "\\|") for cell in body.split("|")]


def long_cells(text: str) -> list[str]:
    """Table cells over CLAIMS.md's limit."""
    return [
        cell
        for line in text.splitlines()
        if line.startswith("|")
        for cell in table_cells(line)
        if len(cell) > MAX_CELL
    ]


def test_no_claims_md_table_cell_is_over_160_characters(tmp_path: Path):
    """One screen per table: long reasons and commands go to numbered notes under it."""
    assert MAX_CELL == 160
    committed = REPO / "results" / "CLAIMS.md"
    assert long_cells(committed.read_text(encoding="utf-8")) == []
    runs = sorted((REPO / "results").glob("*/runs.json"))
    regenerated = claims_md.claims_markdown(load_tables(runs))
    assert long_cells(regenerated) == []
    reason = "no recorded replies: " + "record them with a long command " * 20
    t5 = table("table5", [row("GPT-3.5-Turbo (fixed)", "not_recorded", reason=reason)])
    text = claims_md.claims_markdown(
        load_tables([*two_rows(tmp_path, "smoke"), write(tmp_path, t5)])
    )
    assert long_cells(text) == []
    line = next(line for line in text.splitlines() if "GPT-3.5-Turbo (fixed)" in line)
    assert "| not run (note 1) |" in line
    assert note_of(text, line).startswith("1. not run: 'GPT-4-Turbo (fixed)': in no table given")
    assert "'GPT-3.5-Turbo (fixed)': not recorded in table5" in note_of(text, line)


def test_notes_keep_short_cells_and_number_long_ones():
    notes = Notes()
    assert notes.cell("short") == "short"
    long = "untestable: " + "x " * 100
    assert notes.cell(long) == "untestable (note 1)"
    assert notes.cell(long) == "untestable (note 1)"  # the same text: the same note
    words = "no colon early " * 20
    assert (
        notes.cell(words)
        == "no colon early no colon early no colon early no colon early ... (note 2)"
    )
    assert notes.lines() == ["", f"1. {long}", f"2. {words}"]
    assert table_cells("| a | b \\| c | d |") == ["a", "b \\| c", "d"]
