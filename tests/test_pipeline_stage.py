"""The train stage's real CLI on a tiny table: runs.json rows of every status, metrics, plots."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envgen.results_version import RESULTS_VERSION

REPO = Path(__file__).resolve().parents[1]
TABLE = """
table: tiny
caption: "a tiny table"
rows:
  - row: "PPO"
    run: {method: original_only, original_only_steps: 1000000}
  - row: "Random"
    random_policy: true
  - row: "GPT-3.5-Turbo (fixed)"
    run: {method: fixed, llm_model: gpt-3.5-turbo}
  - row: "Heist PPO"
    run: {game: heist, method: original_only}
    reported_as: {table: table8, row: "Heist PPO"}
reported_only: [Human]
"""


def tiny_params(path: Path) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["profiles"]["smoke"].update(
        step_scale=0.0005,  # the final 1M steps -> 8 rollouts of 64
        seeds=[3],
        ppo={"num_envs": 2, "num_steps": 32, "minibatches": 2},
        random_episodes=1,
        games={  # the Heist row: 10 rollouts of 64 (every phase rounded up to one), 2 test episodes
            "heist": {
                "step_scale": 0.0001,
                "seeds": [3],
                "initial_sets": [0],
                "model": "nature",
                "ppo": {"num_envs": 2, "num_steps": 32, "minibatches": 2},
                "eval_episodes": 2,
            }
        },
    )
    params["execution"]["retries"] = 0
    path.write_text(yaml.safe_dump(params))


def test_train_stage_writes_runs_metrics_and_plots(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TABLE)
    tiny_params(tmp_path / "params.yaml")
    out, metrics, plots = (tmp_path / n for n in ("runs.json", "metrics.json", "scores.json"))
    cmd = [sys.executable, "-m", "envgen.pipeline.train", str(tmp_path / "tiny.yaml")]
    cmd += ["--params", str(tmp_path / "params.yaml"), "--runs-root", str(tmp_path / "runs")]
    cmd += ["--out", str(out), "--metrics", str(metrics), "--plots", str(plots)]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)

    table = json.loads(out.read_text())
    assert (table["table"], table["profile"], table["claim_grade"]) == ("tiny", "smoke", False)
    rows = {row["row"]: row for row in table["rows"]}
    assert {name: row["status"] for name, row in rows.items()} == {
        "PPO": "done",
        "Random": "done",
        "GPT-3.5-Turbo (fixed)": "not_recorded",
        "Heist PPO": "done",
        "Human": "reported_only",
    }
    assert (
        "envgen llm record --backend openai --model gpt-3.5-turbo"
        in rows["GPT-3.5-Turbo (fixed)"]["reason"]
    )
    assert rows["Heist PPO"]["reported_as"] == {"table": "table8", "row": "Heist PPO"}
    (heist,) = rows["Heist PPO"]["runs"]
    assert (heist["game"], heist["global_steps"], heist["episodes"]) == ("heist", 640, 2)
    assert "keys_collected" in heist and "success_rates" not in heist
    assert table["results_version"] == RESULTS_VERSION
    (run,) = rows["PPO"]["runs"]
    assert run["seed"] == 3 and run["global_steps"] == 512 and run["llm_calls"] == 0
    assert len(run["success_rates"]) == len(run["first_unlock_step"]) == 22
    assert (Path(run["run_dir"]) / "final_metrics.json").is_file()
    assert set(json.loads(metrics.read_text())) == {"PPO", "Random", "Heist PPO"}
    assert {r["row"] for r in json.loads(plots.read_text())} == {"PPO", "Random", "Heist PPO"}


def test_every_path_a_stage_writes_is_passed_in_its_cmd():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    variables = {k: v for entry in dvc.get("vars", []) for k, v in entry.items()}
    for name, stage in dvc["stages"].items():
        items = variables[stage["foreach"].strip("${}")] if "foreach" in stage else [None]
        body = stage.get("do", stage)
        for item in items:
            text = yaml.safe_dump(body)
            text = re.sub(r"\$\{item\}", str(item), text)
            for key, value in variables.items():
                text = text.replace("${" + key + "}", str(value))
            expanded = yaml.safe_load(text)
            for kind in ("outs", "metrics", "plots"):
                for entry in expanded.get(kind, []):
                    path = next(iter(entry)) if isinstance(entry, dict) else entry
                    assert path in expanded["cmd"], f"{name}: {path} is not passed in cmd"


def test_plan_prints_runs_and_steps_and_trains_nothing(tmp_path, capsys):
    from envgen.pipeline.train import main

    (tmp_path / "tiny.yaml").write_text(TABLE)
    assert main([str(tmp_path / "tiny.yaml"), "--profile", "paper", "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # PPO 10 seeds x 1M; GPT-3.5 3 sets x 10 seeds and Heist PPO 10 seeds x the default 1.96M
    steps = 10 * 1.0 + (30 + 10) * 1.96
    assert re.search(rf"tiny +50 training runs, +{steps:.2f}M env steps \(\+1000 random", lines[1])
    with pytest.raises(SystemExit):  # training needs the run store named
        main([str(tmp_path / "tiny.yaml"), "--profile", "paper"])


def test_gpu_profile_without_a_gpu_fails_before_training_naming_the_field(tmp_path, capsys):
    import torch

    from envgen.pipeline.train import main

    if torch.cuda.is_available():
        pytest.skip("the check only fires on a machine without a GPU")
    (tmp_path / "tiny.yaml").write_text(TABLE)
    runs = tmp_path / "runs"
    assert main([str(tmp_path / "tiny.yaml"), "--profile", "paper", "--runs-root", str(runs)]) == 1
    assert "profiles.paper.device: 'cuda', but torch finds no GPU" in capsys.readouterr().err
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["executor"] = "ray"  # without ray_address: a local Ray instance, on this machine
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    args = ["--params", str(tmp_path / "params.yaml"), "--profile", "paper"]
    assert main([str(tmp_path / "tiny.yaml"), *args, "--runs-root", str(runs)]) == 1
    assert "profiles.paper.device" in capsys.readouterr().err
    assert not runs.exists()
