"""The numbers scanner (`envgen.evidence.doc_numbers`) sees the forms a hand copy of a
result took to slip past it, in every Markdown file but those verify rebuilds and the
passages' templates (their filled copies are checked in their docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envgen.evidence import doc_numbers


@pytest.mark.parametrize(
    "text",
    [
        "SFL scored 23.42 against 22.39 for DR.",
        "a gain of 3 pts",
        "a gain of +2.1 percentage points",
        "the difference, p ≈ 0.03",
        "final score: 21.4",
        "from 18.5 to 22.1 in cycle 4",
        "21.55 versus 15.14",
        "| sfl | 23.42 |",
        "| sfl |23.42| 22.39 |",
        "| sfl | **23.42** |",
    ],
)
def test_each_escaped_form_is_a_hit(text):
    assert doc_numbers.hits(text), text


def test_words_that_are_not_results_stay_quiet():
    assert not doc_numbers.hits("seeds 56 to 71, 16 per arm, 2 cores, 1.96M steps")
    assert not doc_numbers.hits("| seeds | 16 | 1,961,984 | 0.96M | 12.3 s | v1.2.3 |")


TABLE = "| arm | score |\n|---|---|\n| sfl | 23.42 |\n| dr | 22.39 |\n"


@pytest.mark.parametrize("rel", ["README.md", "docs/a.md", "results/audit/x/README.md"])
def test_a_result_typed_into_a_table_cell_is_named(tmp_path: Path, rel: str):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(f"Scores:\n\n{TABLE}", encoding="utf-8")
    problems = doc_numbers.unchecked(tmp_path, {}, ())
    assert [(p.path, p.line) for p in problems] == [(rel, 5), (rel, 6)], problems
    assert "'23.42' looks like a result (a table cell)" in problems[0].what


def test_a_header_row_excuses_its_table_and_no_further(tmp_path: Path):
    (tmp_path / "README.md").write_text(f"{TABLE}\nSFL scored 23.42 against 22.39.\n")
    allowed = (doc_numbers.NotResult("README.md", "| arm | score |", "why"),)
    problems = doc_numbers.unchecked(tmp_path, {}, allowed)
    assert [(p.path, p.line) for p in problems] == [("README.md", 6)], problems


def test_every_markdown_file_is_scanned_but_the_rebuilt_ones_and_the_templates(tmp_path: Path):
    for rel in (
        "README.md",
        "docs/a.md",
        "results/audit/x/NOTES.md",
        "results/gpu/run/report.md",
        "data/paper/README.md",
        "results/CLAIMS.md",
        "results/tables/table1.md",
        "docs/templates/readme.md",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    scanned = {p.relative_to(tmp_path).as_posix() for p in doc_numbers.doc_files(tmp_path)}
    assert scanned == {
        "README.md",
        "docs/a.md",
        "results/audit/x/NOTES.md",
        "results/gpu/run/report.md",
        "data/paper/README.md",
    }
