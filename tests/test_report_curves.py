"""Learning curves as data DVC compares: one CSV per table, one record per (row, step).

The figures stage writes `results/curves/<table>.csv` from the same binned summaries as
the score-vs-step figure and the per-row CSVs (`envgen.report.curves.score_vs_step`), and
dvc.yaml declares the directory as plots with a template that draws a line per row and a
dash per revision, so `dvc plots diff` overlays two commits' curves offline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from envgen.report import figures
from envgen.report.curves import CURVE_COLUMNS, SUCCESS_PREFIX, curve_table
from envgen.report.inputs import RowRecord, RunRecord, TableRecord
from envgen.scoring import ACHIEVEMENTS, crafter_score

REPO = Path(__file__).resolve().parents[1]
DVC = Path(sys.executable).with_name("dvc")
TEMPLATE = REPO / ".dvc" / "plots" / "row_curves.json"


def episode(step: int, phase: str = "final", reward: float = 1.0, **unlocked: int) -> dict:
    return {
        "length": 100,
        "reward": reward,
        **{f"achievement_{a}": unlocked.get(a, 0) for a in ACHIEVEMENTS},
        "step": step,
        "phase": phase,
        "config_index": 0,
    }


def run(root: Path, name: str, seed: int, episodes: list[dict]) -> RunRecord:
    run_dir = root / name / f"seed-{seed}"
    run_dir.mkdir(parents=True)
    (run_dir / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    return RunRecord(
        seed=seed,
        initial_set=0,
        run_dir=run_dir,
        score=1.0,
        reward=1.0,
        success_rates={a: 0.0 for a in ACHIEVEMENTS},
        first_unlock_step={a: None for a in ACHIEVEMENTS},
        llm_calls=0,
        global_steps=400,
    )


def row(label: str, runs: tuple[RunRecord, ...], status: str = "done") -> RowRecord:
    return RowRecord(label, status, "", "abc" if runs else None, None, runs)


@pytest.fixture
def tiny_table(tmp_path: Path) -> TableRecord:
    """Two done rows of two and one seeds (400 steps: bins of 10), one row not run."""
    ppo = (
        run(tmp_path, "ppo", 0, [episode(5, "orig1", collect_wood=1), episode(15, reward=3.0)]),
        run(tmp_path, "ppo", 1, [episode(4, "llm1", place_table=1), episode(8, reward=2.0)]),
    )
    envgen = (run(tmp_path, "envgen", 0, [episode(12, collect_wood=2, place_table=1)]),)
    rows = (row("PPO", ppo), row("PPO + EnvGen", envgen), row("AD", (), "not_recorded"))
    return TableRecord("table1", "Table 1", "smoke", False, rows, tmp_path / "runs.json")


def test_curve_file_has_one_record_per_row_and_step_with_every_achievement(
    tiny_table: TableRecord, tmp_path: Path
):
    by_row = figures.write_curve_csvs(tiny_table, tmp_path / "plots", tmp_path / "curves")
    curves = pd.read_csv(tmp_path / "curves" / "table1.csv")
    success = [f"{SUCCESS_PREFIX}{a}" for a in ACHIEVEMENTS]
    assert list(curves.columns) == ["row", *CURVE_COLUMNS, *success]
    assert list(zip(curves["row"], curves["step"], strict=True)) == [
        ("PPO", 10),
        ("PPO", 20),
        ("PPO + EnvGen", 20),
    ]
    ppo_first = curves.iloc[0]  # both seeds' original-game episodes in (0, 10]; llm1 left out
    assert ppo_first["episodes"] == 2 and ppo_first["reward"] == pytest.approx(1.5)
    assert ppo_first["success_collect_wood"] == 50 and ppo_first["success_place_table"] == 0
    wood_half = crafter_score([50.0 if a == "collect_wood" else 0.0 for a in ACHIEVEMENTS])
    assert ppo_first["score"] == pytest.approx(wood_half, rel=1e-5)
    last = curves.iloc[2]
    assert last["success_collect_wood"] == last["success_place_table"] == 100
    # the same numbers as the per-row CSVs and the figure's curves (one derivation)
    for label, slug in (("PPO", "ppo"), ("PPO + EnvGen", "ppo_envgen")):
        per_row = pd.read_csv(tmp_path / "plots" / "table1" / f"{slug}.csv")
        mine = curves[curves["row"] == label][list(CURVE_COLUMNS)].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, per_row, check_dtype=False)
        assert by_row[label]["score"].tolist() == pytest.approx(per_row["score"].tolist())


def test_figures_command_writes_curves_only_when_asked(tiny_table: TableRecord, tmp_path: Path):
    lines = figures.write_figures([tiny_table], tmp_path / "figs", tmp_path / "plots")
    assert not (tmp_path / "curves").exists() and not any("curves" in x for x in lines)
    lines = figures.write_figures(
        [tiny_table], tmp_path / "figs", tmp_path / "plots", curves=tmp_path / "curves"
    )
    assert f"wrote {tmp_path / 'curves' / 'table1.csv'}" in lines
    assert curve_table({}).columns.tolist() == ["row", *CURVE_COLUMNS]


def figures_stage() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["figures"]


def test_dvc_yaml_declares_the_curves_as_plots_the_figures_stage_writes():
    stage = figures_stage()
    assert "--curves results/curves" in " ".join(stage["cmd"].split())
    (props,) = [p["results/curves"] for p in stage["plots"] if "results/curves" in p]
    assert props == {"cache": False, "x": "step", "y": "score", "template": "row_curves"}
    template = TEMPLATE.read_text()
    assert '"field": "row"' in template and '"field": "rev"' in template


def test_a_curve_file_is_committed_for_every_table_and_campaign():
    variables = yaml.safe_load((REPO / "dvc.yaml").read_text())["vars"][0]
    names = [*variables["tables"], *(f"campaign_{c}" for c in variables["campaigns"])]
    for name in names:
        curves = pd.read_csv(REPO / "results" / "curves" / f"{name}.csv")
        assert list(curves.columns[:5]) == ["row", *CURVE_COLUMNS], name
        assert len(curves) and all(g.step.is_monotonic_increasing for _, g in curves.groupby("row"))


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this python")
def test_dvc_plots_diff_overlays_two_commits_of_a_curve_file_offline(tmp_path: Path):
    """A repository with the figures stage's plot declaration and two commits of a curve
    file: `dvc plots diff` gives both revisions' records in one row-by-revision plot."""
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "test@example.org")
    git(tmp_path, "config", "user.name", "test")
    subprocess.run([DVC, "init", "-q"], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / ".dvc" / "plots").mkdir()
    shutil.copy(TEMPLATE, tmp_path / ".dvc" / "plots")
    (props,) = [p for p in figures_stage()["plots"] if "results/curves" in p]
    stage = {"cmd": "true", "plots": [props]}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"figures": stage}}))
    curves = tmp_path / "results" / "curves"
    curves.mkdir(parents=True)
    frame = pd.DataFrame(
        {"row": ["PPO", "PPO", "EnvGen"], "step": [10, 20, 10], "score": [1.0, 2.0, 3.0]}
    )
    frame.to_csv(curves / "table1.csv", index=False)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "first")
    frame.assign(score=frame["score"] + 10).to_csv(curves / "table1.csv", index=False)
    git(tmp_path, "commit", "-qam", "second")
    result = subprocess.run(
        [DVC, "plots", "diff", "HEAD~1", "HEAD", "--json", "--targets", "results/curves"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    (plot,) = json.loads(result.stdout)["data"]["results/curves/table1.csv"]
    assert plot["revisions"] == ["HEAD~1", "HEAD"]
    content = plot["content"]
    assert content["encoding"]["color"]["field"] == "row"
    assert content["encoding"]["strokeDash"]["field"] == "rev"
    scores = {(v["rev"], v["row"], v["step"]): float(v["score"]) for v in content["data"]["values"]}
    assert scores[("HEAD~1", "PPO", "20")] == 2.0 and scores[("HEAD", "PPO", "20")] == 12.0
    assert len(scores) == 6


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this python")
def test_exp_show_lists_every_tables_headline_metrics():
    result = subprocess.run(
        [DVC, "exp", "show", "--json", "--no-fetch", "-n", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    workspace = json.loads(result.stdout)[0]
    metrics = workspace["data"]["metrics"]["results/metrics.json"]["data"]
    variables = yaml.safe_load((REPO / "dvc.yaml").read_text())["vars"][0]
    for name in ("table1", *(f"campaign_{c}" for c in variables["campaigns"])):
        assert all("score_mean" in numbers for numbers in metrics[name].values()), name
