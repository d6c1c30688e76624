"""Results tables from hand-made runs.json files: numbers, notes, captions, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from envgen.errors import ReportInputError
from envgen.report import tables
from envgen.report.inputs import load_table, load_tables
from envgen.scoring import ACHIEVEMENTS

RECORD_CMD = "envgen llm record --model gpt-3.5-turbo --backend openai"


def run(seed: int, score: float, reward: float = 5.0, run_dir: str = "results/runs/x") -> dict:
    return {
        "seed": seed,
        "initial_set": 0,
        "run_dir": f"{run_dir}/seed-{seed}",
        "score": score,
        "reward": reward,
        "success_rates": dict.fromkeys(ACHIEVEMENTS, 50.0),
        "first_unlock_step": dict.fromkeys(ACHIEVEMENTS),
        "llm_calls": 4,
        "global_steps": 1000,
    }


def row(
    name: str,
    status: str = "done",
    runs=(),
    reason: str = "",
    reported_as=None,
    config_hash: str | None = None,
) -> dict:
    """A runs.json row; a done row's config hash defaults to one per label."""
    return {
        "row": name,
        "status": status,
        "reason": reason,
        "config_hash": (config_hash or f"hash-{name}") if status == "done" else None,
        "reported_as": reported_as,
        "runs": list(runs),
    }


def table(name: str, rows: list[dict], profile: str = "smoke") -> dict:
    return {
        "table": name,
        "caption": f"caption of {name}",
        "profile": profile,
        "claim_grade": profile == "paper",
        "rows": rows,
    }


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / data["table"] / "runs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


TABLE5 = table(
    "table5",
    [
        row("GPT-3.5-Turbo (fixed)", "not_recorded", reason=f"no recorded replies: {RECORD_CMD}"),
        row("GPT-4-Turbo (fixed)", runs=[run(0, 10.0, 4.0), run(1, 12.0, 5.0), run(2, 14.0, 6.0)]),
        row("SmolLM2-135M-Instruct (fixed, bundled local model)", runs=[run(0, 3.0)]),
        row("Deepseek Coder 33B Instruct (fixed)", "not_implemented", reason="no backend"),
    ],
)


def test_row_numbers_paper_numbers_and_notes(tmp_path: Path):
    frame = tables.table_frame(load_table(write(tmp_path, TABLE5)), tables.load_reported())
    by_row = frame.set_index("row")
    gpt4 = by_row.loc["GPT-4-Turbo (fixed)"]
    assert (gpt4.n_runs, gpt4.score_mean, gpt4.score_std) == (3, 12.0, 2.0)
    assert (gpt4.reward_mean, gpt4.reward_std) == (5.0, 1.0)
    half = 4.302653 * 2.0 / math.sqrt(3)  # Student t, 2 df: the interval holds at n = 3
    assert (gpt4.score_ci_low, gpt4.score_ci_high) == pytest.approx((12 - half, 12 + half))
    assert (gpt4.paper_score_mean, gpt4.paper_score_std, gpt4.paper_n_runs) == (29.9, 0.9, 30)
    smol = by_row.loc["SmolLM2-135M-Instruct (fixed, bundled local model)"]
    assert smol.score_mean == 3.0 and math.isnan(smol.score_std) and math.isnan(smol.score_ci_low)
    assert math.isnan(smol.paper_score_mean)  # not a row of the paper
    gpt35 = by_row.loc["GPT-3.5-Turbo (fixed)"]
    assert gpt35.n_runs == 0 and math.isnan(gpt35.score_mean)
    assert gpt35.note == f"not recorded: no recorded replies: {RECORD_CMD}"
    assert gpt35.paper_score_mean == 21.5
    assert by_row.loc["Deepseek Coder 33B Instruct (fixed)"].note == "not implemented: no backend"


def test_reported_only_and_reported_as_rows(tmp_path: Path):
    data = table(
        "obfuscation",
        [
            row("AD", "reported_only"),
            row(
                "PPO + EnvGen",
                runs=[run(0, 20.0)],
                reported_as={"table": "table1", "row": "PPO + EnvGen"},
            ),
        ],
    )
    frame = tables.table_frame(load_table(write(tmp_path, data)), tables.load_reported())
    ad, envgen = frame.iloc[0], frame.iloc[1]
    assert ad.status == "reported_only" and math.isnan(ad.score_mean) and ad.note == "reported only"
    assert envgen.paper_score_mean == 32.2 and "table1 / PPO + EnvGen" in envgen.note
    text = tables.to_markdown(load_table(write(tmp_path, data)), frame)
    assert "| AD | - | - | - | - | 21.80 ± 1.40 | 12.60 ± 0.30 | reported only |" in text


def test_cli_writes_csv_markdown_and_metrics(tmp_path: Path, capsys):
    path = write(tmp_path, TABLE5)
    out, metrics_path = tmp_path / "tables", tmp_path / "metrics.json"
    assert tables.main([str(path), "--out", str(out), "--metrics", str(metrics_path)]) == 0
    csv = pd.read_csv(out / "table5.csv")
    assert list(csv.columns) == list(tables.COLUMNS) and len(csv) == 4
    md = (out / "table5.md").read_text()
    assert md.startswith("**table5: caption of table5. Profile `smoke`, NOT claim-grade")
    assert "4 runs" in md.splitlines()[0]
    assert f"not recorded: no recorded replies: {RECORD_CMD}" in md
    assert "| GPT-4-Turbo (fixed) | 12.00 ± 2.00 | [" in md
    metrics = json.loads(metrics_path.read_text())
    assert metrics["table5"]["GPT-4-Turbo (fixed)"] == {
        "score_mean": 12.0,
        "reward_mean": 5.0,
        "n_runs": 3,
        "paper_score_mean": 29.9,
    }
    assert "GPT-3.5-Turbo (fixed)" not in metrics["table5"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["rows"][0].update(status="pending"), "rows[0].status"),
        (lambda d: d["rows"][1].update(runs=[]), "rows[1].runs"),
        (lambda d: d["rows"][1]["runs"][0].pop("score"), "rows[1].runs[0].score"),
        (lambda d: d["rows"][1]["runs"][0].update(score=float("nan")), "rows[1].runs[0].score"),
        (lambda d: d["rows"][1]["runs"][0].update(seed=True), "rows[1].runs[0].seed"),
        (lambda d: d.pop("profile"), "runs.json.profile"),
    ],
)
def test_malformed_runs_json_names_the_field(tmp_path: Path, change, field: str):
    data = json.loads(json.dumps(TABLE5))
    change(data)
    with pytest.raises(ReportInputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        load_table(write(tmp_path, data))


def test_a_table_given_twice_is_refused(tmp_path: Path):
    path = write(tmp_path, TABLE5)
    with pytest.raises(ReportInputError, match="table 'table5' is also in"):
        load_tables([path, path])


def test_cli_reports_a_missing_file(tmp_path: Path, capsys):
    missing = tmp_path / "table9" / "runs.json"
    code = tables.main([str(missing), "--out", str(tmp_path), "--metrics", str(tmp_path / "m")])
    assert code == 1
    assert "runs.json: cannot read" in capsys.readouterr().err


def test_runs_of_a_row_not_done_are_listed_but_not_reported(tmp_path: Path):
    partial = row("GPT-3.5-Turbo (fixed)", runs=[run(0, 9.0)])
    partial |= {"status": "not_recorded", "reason": f"1 of 2 run(s) not_recorded: {RECORD_CMD}"}
    data = table("table5", [partial, TABLE5["rows"][1]])
    loaded = load_table(write(tmp_path, data))
    assert len(loaded.rows[0].runs) == 1 and loaded.n_runs == 3
    line = tables.table_frame(loaded, tables.load_reported()).iloc[0]
    assert line.n_runs == 0 and math.isnan(line.score_mean)
    assert line.note == f"not recorded: 1 of 2 run(s) not_recorded: {RECORD_CMD}"


def test_scale_artefacts_are_flagged_in_the_rows_they_affect(tmp_path: Path):
    def runs(steps: int) -> list[dict]:
        return [{**run(i, 2.0), "global_steps": steps} for i in range(2)]

    table7 = table(
        "table7",
        [
            row("ratio 5:1", runs=runs(11264), config_hash="same"),
            row("ratio 2:1", runs=runs(11264), config_hash="same"),
            row("ratio 1:1", runs=runs(9216), config_hash="other"),
        ],
    )
    frame = tables.table_frame(load_table(write(tmp_path, table7)), tables.load_reported())
    notes = frame.set_index("row")["note"]
    assert "one configuration (same) with 'ratio 2:1'" in notes["ratio 5:1"]
    assert "11,264 steps per run vs 'ratio 1:1' 9,216" in notes["ratio 5:1"]
    assert "one configuration" not in notes["ratio 1:1"]
    assert "9,216 steps per run vs 'ratio 5:1' 11,264" in notes["ratio 1:1"]


def test_metrics_json_carries_the_profile(tmp_path: Path):
    metrics = tmp_path / "metrics.json"
    tables.write_tables([load_table(write(tmp_path, TABLE5))], tmp_path / "tables", metrics)
    data = json.loads(metrics.read_text())
    assert data["profile"] == "smoke" and "GPT-4-Turbo (fixed)" in data["table5"]


def test_a_campaign_table_lists_each_rows_success_rate_per_achievement(tmp_path: Path):
    def rated(seed: int, rate: float) -> dict:
        return {**run(seed, 10.0), "success_rates": dict.fromkeys(ACHIEVEMENTS, rate)}

    campaign = table(
        "campaign_cpu",
        [
            row("Crafter only", runs=[rated(0, 10.0), rated(1, 30.0)]),
            row("EnvGen schedule", runs=[rated(0, 40.0)]),
            row("Not yet", "not_started"),
        ],
        profile="cpu",
    )
    paper = write(tmp_path, TABLE5)
    ours = write(tmp_path, campaign)
    tables.write_tables(load_tables([paper, ours]), tmp_path / "out", tmp_path / "m.json")
    rates = pd.read_csv(tmp_path / "out" / "campaign_cpu_achievements.csv", index_col=0)
    assert list(rates.index) == list(ACHIEVEMENTS)
    assert rates["Crafter only mean"].eq(20.0).all()
    assert (rates["Crafter only std"] - math.sqrt(200.0)).abs().max() < 1e-3  # CSV: 6 digits
    assert (
        rates["EnvGen schedule mean"].eq(40.0).all() and rates["EnvGen schedule std"].isna().all()
    )
    assert "Not yet mean" not in rates.columns
    assert rates.loc["collect_iron", "paper: PPO + EnvGen"] == 55  # Figure 4, for context
    markdown = (tmp_path / "out" / "campaign_cpu.md").read_text()
    assert "| Crafter only (n=2) | EnvGen schedule (n=1) |" in markdown
    assert "| collect_iron | 20.00 ± 14.14 | 40.00 |" in markdown
    assert not (tmp_path / "out" / "table5_achievements.csv").exists()  # paper tables: Figure 4


def test_a_table_counts_its_runs_by_the_machine_they_trained_on(tmp_path: Path):
    runs = [run(0, 10.0), run(1, 11.0), run(2, 12.0)]
    runs[0]["machine"] = runs[1]["machine"] = "AMD EPYC (AVX2), cpu"  # runs[2]: none recorded
    data = table("table5", [row("GPT-4-Turbo (fixed)", runs=runs)])
    record = load_table(write(tmp_path, data))
    text = tables.to_markdown(record, tables.table_frame(record, tables.load_reported()))
    assert "\nTrained on (provenance.json): AMD EPYC (AVX2), cpu: 2 runs; unknown: 1 run.\n" in text
