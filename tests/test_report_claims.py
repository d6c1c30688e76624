"""CLAIMS.md from hand-made runs.json files: banner, verdicts, missing rows, accounting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from envgen.report import claims
from envgen.report.inputs import load_tables
from envgen.stats.claims import PAPER_CLAIMS
from envgen.stats.runs import SampleStats
from tests.test_report_tables import row, run, table, write

ENVGEN_SCORES = [33.0, 32.0, 31.5, 32.5, 33.5, 31.0, 32.2, 32.8, 31.8, 33.2]
CRAFTER_SCORES = [26.0, 25.0, 27.5, 26.5, 24.5, 26.8, 27.0, 25.5, 26.2, 25.8]


def two_rows(tmp_path: Path, profile: str) -> list[Path]:
    envgen = [run(i, s, run_dir=str(tmp_path / "envgen")) for i, s in enumerate(ENVGEN_SCORES)]
    crafter = [run(i, s, run_dir=str(tmp_path / "crafter")) for i, s in enumerate(CRAFTER_SCORES)]
    table4 = table(
        "table4",
        [
            row("1.96M Crafter only", runs=crafter),
            row("0.48M EnvGen + 1.48M Crafter", runs=envgen),
            row("1.24M Crafter only", "failed", reason="worker died; rerun `make repro`"),
        ],
        profile,
    )
    table1 = table(
        "table1",
        [
            row("PPO + 0.96M Crafter pretraining", runs=crafter),  # same runs, another label
            row("PPO + EnvGen", runs=envgen),
        ],
        profile,
    )
    return [write(tmp_path, table1), write(tmp_path, table4)]


def claim_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {name} |"))


def test_smoke_profile_has_the_banner_and_only_inconclusive_verdicts(tmp_path: Path):
    text = claims.claims_markdown(load_tables(two_rows(tmp_path, "smoke")))
    assert f"> **{claims.SMOKE_BANNER}.**" in text
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
    text = claims.claims_markdown(load_tables(two_rows(tmp_path, "paper")))
    assert claims.SMOKE_BANNER not in text
    first = claim_line(text, PAPER_CLAIMS[0].name)
    assert "**reproduced**" in first
    diff = np.mean(ENVGEN_SCORES) - np.mean(CRAFTER_SCORES)
    assert f"| {diff:+.2f} [" in first and "| +5.80 |" in first


def test_welch_interval_matches_statsmodels():
    a, b = np.array([10.0, 12.0, 9.0, 13.0]), np.array([8.0, 8.5, 7.0, 9.5, 8.0])
    low, high = claims.welch_interval(SampleStats.of(a, "a"), SampleStats.of(b, "b"))
    expected = CompareMeans(DescrStatsW(a), DescrStatsW(b)).tconfint_diff(usevar="unequal")
    assert (low, high) == pytest.approx(expected, rel=1e-12)


def test_welch_interval_edge_cases():
    one = SampleStats(mean=1.0, std=float("nan"), n=1)
    assert np.isnan(claims.welch_interval(one, SampleStats(2.0, 1.0, 3))).all()
    tied = claims.welch_interval(SampleStats(3.0, 0.0, 3), SampleStats(1.0, 0.0, 4))
    assert tied == (2.0, 2.0)


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
    text = claims.claims_markdown(load_tables(paths))
    assert "about $0.15 per run" in text
    assert "| PPO + EnvGen | 10 | 5.0 | 5000.0 | 100.0 | 0.0500 | gpt-4-1106-preview |" in text
    assert "| 1.96M Crafter only |" not in text.split("## LLM use")[1]  # no LLM, no line


def test_mixed_profiles_are_not_claim_grade(tmp_path: Path):
    paths = two_rows(tmp_path, "paper")
    data = json.loads(paths[1].read_text())
    data["profile"] = "smoke"
    paths[1].write_text(json.dumps(data))
    tables = load_tables(paths)
    assert claims.profile_of(tables) == "mixed (paper, smoke)"
    assert claims.SMOKE_BANNER in claims.claims_markdown(tables)


def test_cli_writes_the_file(tmp_path: Path):
    paths = two_rows(tmp_path, "smoke")
    out = tmp_path / "results" / "CLAIMS.md"
    assert claims.main([*map(str, paths), "--out", str(out)]) == 0
    assert out.read_text().startswith("# The paper's claims, measured")
