"""The three report stages on two real tiny runs: EnvGen and Crafter only.

The EnvGen run has one cycle (generate, train, evaluate) so that its only LLM call,
the first generation, replays from the pipeline's cache (data/llm_cache); adapted
cycles would need replies recorded for this run's own evaluation, which only a
local model server could give (about two minutes here). Multi-cycle inputs are
covered by test_report_figures.py. Runs.json files are built from the runs'
final_metrics.json as the pipeline's train stages write them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from envgen.llm.cache import CachedLLM
from envgen.llm.client import backend_config
from envgen.loop.config import RunConfig
from envgen.loop.runner import execute_run
from envgen.report import claims_md, figures, tables
from envgen.report.inputs import read_cycles

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# One PPO epoch: a third of the update cost (what this tests is the report, not PPO).
PPO = (
    ("checkpoint_every", 512),
    ("epochs", 1),
    ("minibatches", 4),
    ("num_envs", 4),
    ("num_steps", 64),
)
ENVGEN = RunConfig(
    n_cycles=1, llm_env_steps=256, orig_env_steps=256, final_steps=4096, eval_episodes=1, ppo=PPO
)  # 1024 final steps per env: episodes end in the scored phase on any trajectory
CRAFTER_ONLY = ENVGEN.replace(method="original_only", original_only_steps=4608)
RECORD_CMD = "envgen llm record --model gpt-3.5-turbo"
RUN_KEYS = ("score", "reward", "success_rates", "first_unlock_step", "llm_calls", "global_steps")


def entry(run_dir: Path) -> dict:
    metrics = json.loads((run_dir / "final_metrics.json").read_text())
    return {"seed": 0, "initial_set": 0, "run_dir": str(run_dir)} | {
        k: metrics[k] for k in RUN_KEYS
    }


def done(name: str, run_dir: Path, reported_as: dict | None = None) -> dict:
    return {
        "row": name,
        "status": "done",
        "reason": "",
        "config_hash": run_dir.parent.name,
        "reported_as": reported_as,
        "runs": [entry(run_dir)],
    }


def not_run(name: str, status: str, reason: str = "") -> dict:
    return {"row": name, "status": status, "reason": reason, "config_hash": None}


@pytest.fixture(scope="module")
def runs_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    llm = CachedLLM("replay", REPO / "data" / "llm_cache", backend_config("local"))
    envgen = execute_run(ENVGEN, 0, root / "runs", llm)
    crafter = execute_run(CRAFTER_ONLY, 0, root / "runs")
    table1 = [
        not_run("PPO", "not_recorded", f"no replies recorded: {RECORD_CMD}"),
        done("PPO + 0.96M Crafter pretraining", crafter),
        done("PPO + EnvGen", envgen),
        not_run("Random", "not_implemented", "random-policy rows are not wired"),
        not_run("AD", "reported_only"),
    ]
    obfuscation = [
        not_run("obfuscated parameter names", "failed", "crashed; `dvc repro` resumes it"),
        done("PPO + EnvGen", envgen, {"table": "table1", "row": "PPO + EnvGen"}),
    ]
    paths = {"envgen": envgen, "crafter": crafter}
    for name, rows in (("table1", table1), ("obfuscation", obfuscation)):
        data = {"table": name, "caption": name, "profile": "smoke", "claim_grade": False}
        paths[name] = root / name / "runs.json"
        paths[name].parent.mkdir()
        paths[name].write_text(json.dumps(data | {"rows": rows}))
    return paths


def test_tables_on_real_runs(runs_json: dict[str, Path], tmp_path: Path):
    out, metrics_path = tmp_path / "tables", tmp_path / "metrics.json"
    args = [str(runs_json["table1"]), str(runs_json["obfuscation"])]
    assert tables.main([*args, "--out", str(out), "--metrics", str(metrics_path)]) == 0
    final = json.loads((runs_json["envgen"] / "final_metrics.json").read_text())
    row = pd.read_csv(out / "table1.csv").set_index("row").loc["PPO + EnvGen"]
    assert row.n_runs == 1 and row.score_mean == pytest.approx(final["score"], rel=1e-5)
    md = (out / "table1.md").read_text()
    assert f"not recorded: no replies recorded: {RECORD_CMD}" in md
    assert "| AD | - | - | - | - | 21.80 ± 1.40 |" in md
    metrics = json.loads(metrics_path.read_text())
    assert set(metrics["table1"]) == {"PPO + 0.96M Crafter pretraining", "PPO + EnvGen"}


def test_figures_on_real_runs(runs_json: dict[str, Path], tmp_path: Path, capsys):
    out, plots = tmp_path / "paper_figures", tmp_path / "plots"
    args = [str(runs_json["table1"]), str(runs_json["obfuscation"])]
    assert figures.main([*args, "--out", str(out), "--plots", str(plots)]) == 0
    names = ["fig4_per_achievement", "fig5_first_unlock", "fig6_adaptation", "gallery"]
    names += ["score_vs_step_table1", "score_vs_step_obfuscation"]
    for name in names:
        assert Image.open(out / f"{name}.png").size[0] > 300
        assert (out / f"{name}.pdf").read_bytes().startswith(b"%PDF")
    curve = pd.read_csv(plots / "table1" / "ppo_envgen.csv")
    assert list(curve.columns) == ["step", "score", "reward", "episodes"] and len(curve)
    assert (
        curve["step"].max()
        <= json.loads((runs_json["envgen"] / "final_metrics.json").read_text())["global_steps"]
        + 64 * 4
    )
    cycles = read_cycles(runs_json["envgen"])
    assert [c.index for c in cycles] == [1] and cycles[0].evaluation["step"] == 512
    assert figures.change_lines(cycles)[0] == "cycle 1:"


def test_claims_on_real_runs(runs_json: dict[str, Path], tmp_path: Path):
    out = tmp_path / "CLAIMS.md"
    assert claims_md.main([str(runs_json["table1"]), "--out", str(out)]) == 0
    text = out.read_text()
    assert claims_md.SMOKE_BANNER in text
    accounting = json.loads((runs_json["envgen"] / "llm_accounting.json").read_text())
    assert accounting["calls"] == 1
    line = next(x for x in text.splitlines() if x.startswith("| PPO + EnvGen | 1 |"))
    assert f"| {accounting['prompt_tokens']:.1f} |" in line
    assert "smollm2-135m-instruct" in line
