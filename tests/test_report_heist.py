"""Table 8 end to end at toy size: plan under a profile, real Heist runs, report stages.

replication/table8.yaml is planned under the smoke profile with a smaller `games.heist`
section (1 seed, 4 x 32 rollouts, 4 test episodes); both rows train for real (procgen
Heist, torch; the EnvGen row replays the bundled model's committed reply), their
runs.json is assembled as the train stage does, and tables, figures and claims read it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from envgen.pipeline.job_status import DONE, results_versions
from envgen.pipeline.jobs import LLMSpec, Settings, run_job
from envgen.pipeline.plan import plan_table, read_replication_file
from envgen.pipeline.profile import load_profile
from envgen.pipeline.results import table_results
from envgen.report import claims_md, figures, tables

REPO = Path(__file__).resolve().parents[1]
TINY_HEIST = {
    "step_scale": 0.00002,  # 25M -> 4 rollouts of 128; 5M -> 1, 20M -> 3
    "seeds": [0],
    "initial_sets": [0],
    "model": "nature",
    "ppo": {"num_envs": 4, "num_steps": 32, "minibatches": 2},
    "eval_episodes": 4,
}


@pytest.fixture(scope="module")
def table8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("table8")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["profiles"]["smoke"]["games"]["heist"] = TINY_HEIST
    profile = load_profile(params, "smoke")
    plan = plan_table(read_replication_file(REPO / "replication" / "table8.yaml"), profile)
    settings = Settings(
        runs_root=str(root / "runs"),
        versions=results_versions(),
        llm=LLMSpec("replay", str(REPO / "data" / "llm_cache")),
    )
    results = {job.key: run_job(job, settings) for job in plan.jobs}
    assert [r.status for r in results.values()] == [DONE, DONE], results
    data = table_results(plan, profile, results, settings.runs_root, settings.versions)
    path = root / "table8" / "runs.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


def test_table8_runs_are_tiny_heist_runs(table8: Path):
    rows = json.loads(table8.read_text())["rows"]
    assert [(r["row"], r["status"], r["game"]) for r in rows] == [
        ("Heist PPO", "done", "heist"),
        ("Heist PPO + EnvGen", "done", "heist"),
    ]
    plain, envgen = (r["runs"][0] for r in rows)
    assert plain["global_steps"] == envgen["global_steps"] == 512
    # EnvGen: the initial call and one redraw, since the smoke designer's (the 1.5B model's)
    # first reply repeats a world and its second does not (llm_redraw_repeats; docs/llm.md,
    # "Repeated worlds")
    assert (plain["llm_calls"], envgen["llm_calls"], plain["episodes"]) == (0, 2, 4)


def test_table8_table_has_success_and_reward_beside_the_papers(table8: Path, tmp_path: Path):
    out = tmp_path / "tables"
    assert tables.main([str(table8), "--out", str(out), "--metrics", str(tmp_path / "m.json")]) == 0
    frame = pd.read_csv(out / "table8.csv").set_index("row")
    runs = {r["row"]: r["runs"][0] for r in json.loads(table8.read_text())["rows"]}
    for name, run in runs.items():
        line = frame.loc[name]
        assert line.n_runs == 1 and line.score_mean == pytest.approx(run["score"])
        assert line.reward_mean == pytest.approx(run["reward"])
        assert run["score"] == pytest.approx(10 * run["reward"])  # 10 per stolen gem
    assert frame.loc["Heist PPO + EnvGen"].paper_score_mean == pytest.approx(37.7)
    assert frame.loc["Heist PPO"].paper_reward_mean == pytest.approx(4.1)
    md = (out / "table8.md").read_text()
    assert "| Row | Success % (ours) |" in md and "| Success % (paper) |" in md


def test_table8_figures_and_claims(table8: Path, tmp_path: Path):
    plots = tmp_path / "plots"
    args = [str(table8), "--out", str(tmp_path / "figs"), "--plots", str(plots)]
    assert figures.main(args) == 0
    assert (tmp_path / "figs" / "score_vs_step_table8.png").is_file()
    assert claims_md.main([str(table8), "--out", str(tmp_path / "CLAIMS.md")]) == 0
    line = next(x for x in (tmp_path / "CLAIMS.md").read_text().splitlines() if "Table 8" in x)
    assert "(1) |" in line and "**inconclusive**" in line  # smoke is never claim-grade
