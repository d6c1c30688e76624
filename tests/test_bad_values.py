"""Numbers that are not finite, out of range or too large for memory, and unknown keys:
one line naming file, field and fix, before anything runs or is written.

params.yaml goes through `check_params` (the DVC stage before every train stage, so a
bad value stops `dvc repro` before DVC removes any output); run configs through
`envgen run`'s `checked_config`. A run whose loss turns non-finite stops there with one
line and writes no score.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import yaml

from envgen.agents.config import PPOConfig, model_preset
from envgen.agents.trainer import Trainer, crafter_vec_env_factory
from envgen.envs.crafter.config import CrafterConfig
from envgen.errors import ConfigError, EnvGenError
from envgen.loop.cli import checked_config
from envgen.pipeline.params_stage import resolved_params
from tests.envgen_cli import envgen_subprocess

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
SMOKE_PPO = {"num_envs": 8, "num_steps": 64, "minibatches": 4}


def _params_with(path: str, value) -> dict:
    params = copy.deepcopy(PARAMS)
    *parents, last = path.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[last] = value
    return params


def _one_line(text: str, *words: str) -> None:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    for word in words:
        assert word in lines[0], (word, lines[0])


PARAMS_CASES = [
    ("profiles.smoke.step_scale", float("nan"), "profiles.smoke.step_scale", "not a finite"),
    ("profiles.smoke.step_scale", float("inf"), "profiles.smoke.step_scale", "not a finite"),
    ("profiles.smoke.step_scale", 1e9, "profiles.smoke.step_scale", "more than"),
    ("profiles.smoke.step_scale", 0.0001, "profiles.smoke.step_scale", "too few to finish"),
    ("profiles.paper.ppo", {"lr": float("nan")}, "profiles.paper.ppo.lr", "not a finite"),
    ("profiles.paper.ppo", {"lr": -1.0}, "profiles.paper.ppo.lr", "(0, 1]"),
    ("profiles.paper.ppo", {"clip": 0.0}, "profiles.paper.ppo.clip", "> 0"),
    (
        "profiles.smoke.ppo",
        {**SMOKE_PPO, "num_envs": 1_000_000},
        "profiles.smoke.ppo.num_envs",
        "GiB",
    ),
    ("profiles.smoke.min_rollouts", 10**12, "profiles.smoke.min_rollouts", "more than"),
    ("profiles.smoke.eval_episodes", 10**9, "profiles.smoke.eval_episodes", "more than"),
    ("profiles.smoke.torch_threads", 10**6, "profiles.smoke.torch_threads", "more than"),
    ("profle", "paper", "profle", "did you mean `profile`"),
    ("profiles.smoke.seedz", [0], "profiles.smoke.seedz", "did you mean `seeds`"),
    ("profiles.smoke.ppo", {"lrr": 1e-3}, "profiles.smoke.ppo.lrr", "did you mean `lr`"),
    ("execution.workerz", 2, "execution.workerz", "did you mean `workers`"),
    ("execution.gpus_per_run", float("nan"), "execution.gpus_per_run", "not a finite"),
    ("execution.workers", 10**9, "execution.workers", "more than"),
]


@pytest.mark.parametrize(("path", "value", "field", "words"), PARAMS_CASES)
def test_params_values_refused(tmp_path, path, value, field, words):
    file = tmp_path / "params.yaml"
    file.write_text(yaml.safe_dump(_params_with(path, value)))
    with pytest.raises(ConfigError) as err:
        resolved_params(file)
    _one_line(str(err.value), str(file), f"{field}:", words)


RUN_CASES = [
    ({"ppo": {"lr": float("inf")}}, "ppo.lr", "not a finite"),
    ({"ppo": {"lr": float("nan")}}, "ppo.lr", "not a finite"),
    ({"ppo": {"lr": -1.0}}, "ppo.lr", "(0, 1]"),
    ({"ppo": {"clip": -5.0}}, "ppo.clip", "> 0"),
    ({"ppo": {"num_envs": 1_000_000}}, "ppo.num_envs", "GiB"),
    ({"final_steps": 10**15}, "final_steps", "more than"),
    ({"n_cycles": 10**9, "method": "envgen"}, "n_cycles", "more than"),
    ({"final_steps": 64}, "final_steps", "too few to finish an episode"),
    ({"n_cycels": 3}, "n_cycels", "did you mean `n_cycles`"),
    ({"llm_temperature": 3.0}, "llm_temperature", "outside 0..2"),
    ({"llm_temperature": -0.5}, "llm_temperature", "paper: 0"),
]


@pytest.mark.parametrize(("extra", "field", "words"), RUN_CASES)
def test_run_config_values_refused(tmp_path, extra, field, words):
    file = tmp_path / "run.yaml"
    file.write_text(yaml.safe_dump({"method": "original_only", **extra}))
    with pytest.raises(ConfigError) as err:
        checked_config(file)
    _one_line(str(err.value), str(file), f"{field}:", words)


def test_envgen_run_with_inf_lr_is_one_line_and_writes_nothing(tmp_path):
    (tmp_path / "run.yaml").write_text("method: original_only\nppo: {lr: .inf}\n")
    result = envgen_subprocess("run", "run.yaml", "--seed", "0", cwd=tmp_path)
    assert result.returncode != 0
    _one_line(result.stdout + result.stderr, "ppo.lr", "not a finite")
    assert [p.name for p in tmp_path.iterdir()] == ["run.yaml"]


def test_training_stops_at_the_first_non_finite_loss(tmp_path):
    """Weights spoilt (as a too-large step would): one line, no metrics line, no score."""
    ppo = PPOConfig(num_envs=2, num_steps=16, minibatches=2, checkpoint_every=1 << 20)
    trainer = Trainer(
        model_preset("nature"), ppo, 0, tmp_path, env_factory=crafter_vec_env_factory(1)
    )
    with torch.no_grad():
        next(trainer.model.parameters()).fill_(float("nan"))
    with pytest.raises(EnvGenError) as err:
        trainer.train_until(64, [CrafterConfig(length=20)])
    trainer.close()
    _one_line(str(err.value), str(tmp_path), "diverged at step 0", "ppo.lr")
    assert (tmp_path / "metrics.jsonl").read_text() == ""
    assert not (tmp_path / "final_metrics.json").exists()
