"""`envgen run CONFIG --profile NAME`: the config scaled as the pipeline plans its row
(`envgen.pipeline.run_cli`), so one run at a profile's scale needs no Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envgen.loop.config import RunConfig
from envgen.pipeline.params_stage import load_settings
from envgen.pipeline.plan import plan_table
from envgen.pipeline.run_cli import PARAMS, profiled

# PPO in stock Crafter, 200,000 final steps in paper units (the shape of Table 1's
# "Crafter only" row, a fifth of its steps): smoke scales them down to two rollouts of its
# own PPO (2 x 8 x 64 = 1,024 steps, 128 per env, enough to finish episodes). No
# tests/data/guard config fits: their Crafter final phases (1,024 steps) scale to one
# rollout, 64 steps per env, which the scored-phase check refuses.
CONFIG_TEXT = "method: original_only\nllm_env_steps: 0\norig_env_steps: 0\nfinal_steps: 200000\n"


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "crafter_only.yaml"
    path.write_text(CONFIG_TEXT)
    return path


def smoke_config(path: Path) -> RunConfig:
    profile, _ = load_settings(PARAMS, "smoke")
    return profiled(profile)(RunConfig.from_yaml(path), path)


def test_the_profiled_config_is_the_pipelines_row(config_path: Path):
    """The same config, hash included, as `plan_table` gives a row whose `run:` is the file."""
    profile, _ = load_settings(PARAMS, "smoke")
    row = {"row": "r", "run": yaml.safe_load(config_path.read_text())}
    (job, *_) = plan_table({"table": "t", "rows": [row]}, profile).rows[0].jobs
    assert smoke_config(config_path) == job.config


def test_a_file_initial_set_wins_over_the_profiles(tmp_path: Path):
    path = tmp_path / "random.yaml"
    path.write_text("designer: random\ninitial_set: 2\n")
    assert smoke_config(path).initial_set == 2
    path.write_text("designer: random\n")
    assert smoke_config(path).initial_set == 0  # smoke's initial_sets: [0]


@pytest.mark.slow
def test_envgen_run_with_a_profile_trains_the_scaled_run(config_path: Path, tmp_path: Path):
    config = smoke_config(config_path)
    steps = config.final_steps + config.n_cycles * (config.llm_env_steps + config.orig_env_steps)
    assert (config.final_steps, steps) == (1024, 1024)  # small enough to train here
    runs = tmp_path / "runs"
    command = [sys.executable, "-W", "ignore", "-m", "envgen.cli", "run", str(config_path)]
    command += ["--profile", "smoke", "--seed", "0", "--runs-root", str(runs)]
    done = subprocess.run([*command, "--workers", "1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_yaml,) = runs.glob("*/seed-0/run.yaml")
    assert run_yaml.parent.parent.name == config.config_hash()
    recorded = yaml.safe_load(run_yaml.read_text())
    written = recorded.get("config", recorded)
    assert (written["final_steps"], written["ppo"]["num_envs"]) == (1024, 8)
    assert (written["eval_episodes"], written["validation_steps"]) == (3, 512)
