"""rliable's views in the report: CLAIMS.md's descriptive line per campaign, its figure, and
`envgen verify` naming a printed number edited by hand."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from envgen.report import claims_md, figures
from envgen.report.campaign_section import withheld_runs
from envgen.report.inputs import load_table
from envgen.report.rliable_campaign import campaign_arms, claims_line
from envgen.stats.rliable_views import compare, improvement_probability
from tests.test_report_figures import campaign_table

REPO = Path(__file__).resolve().parents[1]
LLM15 = Path("results/campaign_llm15/runs.json")


def test_the_line_prints_each_pairs_probability_of_improvement():
    table = load_table(REPO / LLM15)
    arms = campaign_arms(table)
    assert arms.pairs == (
        ("EnvGen: Qwen2.5-Coder-1.5B designer", "Domain randomization: EnvGen schedule"),
    )
    a, b = (arms.arms["score"][row] for row in arms.pairs[0])
    x = compare(improvement_probability, a, b)
    line = claims_line(table, None)
    assert f"P(a > b) on the score {x.point:.2f} [{x.low:.2f}, {x.high:.2f}]" in line
    assert line.startswith("rliable's views, descriptive")
    assert claims_line(table, "3 of 32 runs").endswith(
        "given with the registered verdict (3 of 32 runs)."
    )


def test_a_campaign_without_claims_compares_every_pair_of_its_finished_rows():
    table = campaign_table({"A": [15.0, 16.5, 14.0], "B": [21.8, 20.0], "C": [], "D": [1.0, 2.0]})
    table = dataclasses.replace(table, table="campaign_new")
    assert campaign_arms(table).pairs == (("A", "B"), ("A", "D"), ("B", "D"))


def test_the_figure_is_drawn_for_finished_rows_and_skipped_without(tmp_path: Path):
    table = campaign_table({"A": [15.0, 16.5, 14.0], "B": [21.8, 20.0]})
    lines = figures._campaign_rliable(table, tmp_path / "rliable_campaign_cpu")
    assert lines == [f"wrote {tmp_path / 'rliable_campaign_cpu'}.{ext}" for ext in ("png", "pdf")]
    assert np.asarray(Image.open(tmp_path / "rliable_campaign_cpu.png")).ndim == 3
    empty = campaign_table({"A": []})
    assert figures._campaign_rliable(empty, tmp_path / "none") == ["skipped none: no finished runs"]


@pytest.mark.slow
def test_verify_names_an_edited_rliable_number(tmp_path: Path, monkeypatch):
    from envgen.evidence.checks import check_tables

    for name in ("dvc.yaml", "params.yaml", "replication", "results", "data"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("checkpoints"))
        else:
            shutil.copy(source, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert withheld_runs(load_table(LLM15)) is None
    claims = Path("results/CLAIMS.md")
    claims_md.main([str(LLM15), "--out", str(claims)])  # this code's CLAIMS.md of llm15 alone
    assert _claims_check(check_tables, tmp_path / "before").ok
    lines = claims.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if line.startswith("rliable's views"))
    found = re.search(r"P\(a > b\) on the score (\d\.\d\d)", lines[number])
    assert found is not None
    edited = f"{float(found[1]) + 0.01:.2f}"
    lines[number] = lines[number].replace(found[0], found[0][: -len(found[1])] + edited)
    claims.write_text("\n".join(lines) + "\n")
    check = _claims_check(check_tables, tmp_path / "after")
    assert not check.ok and check.detail == f"results/CLAIMS.md line {number + 1}"


def _claims_check(check_tables, work: Path):
    work.mkdir()
    return next(c for c in check_tables([LLM15], work) if c.name == "CLAIMS.md")
