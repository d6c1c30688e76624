"""DVC conveniences: offline figures, narrow metrics views, no gym banner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envgen.report.dvc_campaigns import regenerate

REPO = Path(__file__).resolve().parents[1]
DVC = Path(sys.executable).with_name("dvc")


def test_every_committed_figure_is_an_image_plot():
    listed = yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
    committed = sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("paper_figures/*.png"))
    assert sorted(listed) == committed


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this python")
def test_metrics_diff_lists_one_number_per_line():
    result = subprocess.run(
        [DVC, "metrics", "diff", "--all", "--targets", "results/table1/metrics.json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in result.stdout.splitlines() if "metrics.json" in line]
    assert any("PPO + EnvGen.score" in line for line in lines)
    assert max(len(line) for line in lines) < 200


def test_gym_deprecation_notice_is_not_printed():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import envgen.envs.heist.engine, crafter, gym; print(gym.__version__)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip()
    assert "Gym has been unmaintained" not in result.stderr


def test_dvc_yaml_lists_each_declared_campaign_as_generated():
    """dvc.yaml's campaign lists (collect stages, the report's runs.json, the figures) are
    what `python -m envgen.report.dvc_campaigns` writes from replication/campaign_*.yaml,
    each campaign once its `report` is on (headline's was switched on with its last run)."""
    text = (REPO / "dvc.yaml").read_text()
    assert regenerate(text, REPO / "replication") == text
    assert yaml.safe_load(text)["vars"][0]["campaigns"] == {
        "cpu": "cpu",
        "confirm": "cpu",
        "llm15": "cpu",
        "sfl": "cpu",
        "headline": "cpu",
    }
