"""Replay drift from run summaries to runs.json rows, tables and CLAIMS.md lines."""

from __future__ import annotations

import pytest

from envgen.errors import ReportInputError
from envgen.pipeline.results import row_replay
from envgen.report import replay
from envgen.report.inputs import load_table
from tests.test_report_tables import row, run, table, write


def summary(exact: int, slot: int, max_drift: float, mean_drift: float) -> dict:
    return {
        "calls": exact + slot,
        "exact": exact,
        "slot": slot,
        "live": 0,
        "feedback_calls": exact + slot - 1,
        "differing": 3 * slot,
        "max_drift": max_drift,
        "mean_drift": mean_drift,
    }


def test_row_replay_sums_runs_and_weights_drift_by_feedback_calls():
    runs = [{"llm_replay": summary(4, 0, 0.0, 0.0)}, {"llm_replay": summary(2, 2, 50.0, 3.0)}]
    total = row_replay(runs)
    assert total is not None
    assert (total["calls"], total["exact"], total["slot"], total["max_drift"]) == (8, 6, 2, 50.0)
    assert total["mean_drift"] == pytest.approx(1.5)
    assert row_replay([{"score": 1.0}]) is None


def test_tables_and_claims_show_each_tables_drift(tmp_path):
    envgen = row("PPO + EnvGen", runs=[run(0, 2.0), run(1, 3.0)])
    envgen["llm_replay"] = summary(5, 3, 41.7, 2.5)
    plain = row("PPO", runs=[run(0, 1.0)])
    loaded = load_table(write(tmp_path, table("table1", [envgen, plain])))
    assert replay.row_lines(loaded)[-1] == (
        "- PPO + EnvGen: replayed 8 calls (5 exact, 3 by slot); feedback drift up to "
        "41.7 points (mean 2.50)"
    )
    (line,) = [x for x in replay.claims_lines([loaded]) if x.startswith("- ")]
    assert line.startswith("- table1: replayed 8 calls (5 exact, 3 by slot)")


def test_calls_asked_live_are_counted_apart_from_replayed_ones(tmp_path):
    """A campaign's recording runs ask the server as they train: those calls are not
    replayed, and the line says so (before, "replayed 64 calls (37 exact, 0 by slot)")."""
    recorded = row("PPO + EnvGen", runs=[run(0, 2.0), run(1, 3.0)])
    recorded["llm_replay"] = {**summary(5, 0, 0.0, 0.0), "calls": 8, "live": 3}
    loaded = load_table(write(tmp_path, table("campaign_x", [recorded])))
    assert replay.row_lines(loaded)[-1] == (
        "- PPO + EnvGen: 8 calls: 3 asked live as the runs trained (recorded with them), "
        "5 replayed exact, 0 by slot; feedback drift up to 0.0 points (mean 0.00)"
    )
    (line,) = [x for x in replay.claims_lines([loaded]) if x.startswith("- ")]
    assert line.startswith("- campaign_x: 8 calls: 3 asked live")


def test_a_malformed_replay_summary_is_named(tmp_path):
    bad = row("PPO + EnvGen", runs=[run(0, 2.0)])
    bad["llm_replay"] = {"calls": "eight"}
    with pytest.raises(ReportInputError, match=r"llm_replay\.calls"):
        load_table(write(tmp_path, table("table1", [bad])))
