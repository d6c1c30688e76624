"""A campaign added by files alone: a replication file with its `campaign:` section and a
registration document, in a scratch project, trained at the smallest scale (2 seeds per
arm, the smoke profile at tiny steps), collected and reported; no Python written
(docs/pipeline.md, "Add a campaign")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envgen.report.dvc_campaigns import regenerate
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
TOY = """\
table: campaign_toy
caption: "Toy campaign: domain randomization vs Crafter only"
rows:
  - row: "Crafter only"
    run: {method: original_only}
  - row: "Domain randomization"
    run: {designer: random}
campaign:
  order: 9
  profile: smoke
  seeds: [0, 1]
  registration: docs/campaign_toy.md
  what: "registered: a toy, domain randomization vs Crafter only (profile smoke)"
  analyses: [{per_achievement: "D1, descriptive"}]
  families:
    - heading: "H1, the registered primary test (score)"
      claims:
        - {name: "H1: DR > Crafter only", a: Domain randomization, b: Crafter only,
           better: better}
  verdict:
    subject: domain randomization
    against: Crafter only
    runs: "{a} + {b} seeds"
    coda: Random worlds raised {rate} of the toy.
"""
REGISTRATION = """\
# Registration: the toy campaign

H1: domain randomization > Crafter only, one-sided Welch on the score, 2 + 2 seeds.
Verdict if better: "better: domain randomization scored +D points above Crafter only
(one-sided 95% lower bound +L, p = p; 2 + 2 seeds). Random worlds raised the Crafter
score of the toy."

## Deviations
"""


def tiny_smoke_params() -> dict:
    """params.yaml with the smoke profile at tiny steps: one 64-step rollout per phase."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["profiles"]["smoke"].update(
        step_scale=0.0005,  # the final 1M steps -> 8 rollouts of 64
        ppo={"num_envs": 2, "num_steps": 32, "minibatches": 2},
        eval_episodes=1,
        validation_steps=64,
        random_episodes=1,
    )
    params["execution"].update(retries=0, workers=2)
    return params


def test_a_campaign_added_by_two_files_runs_to_its_report(tmp_path):
    (tmp_path / "replication").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "replication" / "campaign_toy.yaml").write_text(TOY)
    (tmp_path / "docs" / "campaign_toy.md").write_text(REGISTRATION)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tiny_smoke_params()))

    for action in ("run", "collect"):
        args = ["campaign", action, "toy", *(["--no-commit"] if action == "run" else [])]
        done = envgen_subprocess(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads((tmp_path / "results/campaign_toy/runs.json").read_text())
    assert {r["row"]: len(r["runs"]) for r in runs["rows"]} == {
        "Crafter only": 2,
        "Domain randomization": 2,
    }

    claims = tmp_path / "CLAIMS.md"
    cmd = [sys.executable, "-m", "envgen.report.claims_md", "results/campaign_toy/runs.json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([*cmd, "--out", str(claims)], cwd=tmp_path, env=env, check=True)
    text = claims.read_text()
    assert "### campaign_toy: registered: a toy, domain randomization vs Crafter only" in text
    h1 = next(line for line in text.splitlines() if line.startswith("| H1: DR > Crafter only"))
    assert "| - |" in h1  # no paper pair: no paper difference, no power
    assert "Registered wording (docs/campaign_toy.md):" in text
    assert "#### D1, descriptive: Domain randomization − Crafter only, every achievement" in text

    # dvc.yaml's generated lists name it: its collect stage, runs.json and four figures
    dvc = regenerate((REPO / "dvc.yaml").read_text(), tmp_path / "replication")
    assert "campaigns: {toy: smoke}" in dvc
    assert "      - results/campaign_toy/runs.json\n" in dvc
    assert "  - paper_figures/rliable_campaign_toy.png\n" in dvc


def _refused(tmp_path: Path, declaration: str) -> str:
    """The one line `envgen campaign status toy` fails with on `declaration`."""
    (tmp_path / "replication").mkdir()
    (tmp_path / "replication" / "campaign_toy.yaml").write_text(declaration)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tiny_smoke_params()))
    done = envgen_subprocess("campaign", "status", "toy", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


def test_a_misspelt_declaration_key_is_one_line_naming_the_file_and_key(tmp_path):
    line = _refused(tmp_path, TOY.replace("  families:", "  famlies:"))
    assert "campaign_toy.yaml: campaign.famlies: unknown; allowed: analyses, families" in line


@pytest.mark.parametrize(
    "keys, error",
    [
        (
            "after_better: [a gain]",
            "campaign.verdict.after_better: 'a gain' names none of paper_references "
            "(allowed: none declared)",
        ),
        ("after_better: a gain", "campaign.verdict.after_better: must be a list of"),
        ("paper_references: [5]", "campaign.verdict.paper_references: must be a list of ["),
    ],
)
def test_malformed_verdict_references_are_one_line_naming_the_key(tmp_path, keys, error):
    line = _refused(tmp_path, TOY.replace("    coda:", f"    {keys}\n    coda:"))
    assert error in line


def test_a_misspelt_analysis_option_is_one_line_naming_it_and_the_options(tmp_path):
    bad = TOY.replace(
        '[{per_achievement: "D1, descriptive"}]',
        '[{per_achievement: {heading: "D1, descriptive", name: [collect_coal]}}]',
    )
    line = _refused(tmp_path, bad)
    assert "campaign.analyses.per_achievement: unknown option(s) name: choose from heading" in line
