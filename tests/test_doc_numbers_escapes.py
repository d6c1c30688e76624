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
    ],
)
def test_each_escaped_form_is_a_hit(text):
    assert doc_numbers.hits(text), text


def test_words_that_are_not_results_stay_quiet():
    assert not doc_numbers.hits("seeds 56 to 71, 16 per arm, 2 cores, 1.96M steps")


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
