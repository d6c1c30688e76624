"""Bad input ends in one line naming file, field and fix, with nothing written.

The loaders are fed wrong types and values directly (fast); a few cases go through the
real CLIs in a subprocess to check the exit code, the single line and the lack of a
traceback; one runs `dvc repro` on params with a wrong type.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from envgen.agents.checkpoint import load_checkpoint
from envgen.agents.runlog import JsonlLog, read_jsonl
from envgen.errors import ConfigError, EnvGenError
from envgen.loop.config import RunConfig
from envgen.pipeline.params_stage import read_params, resolved_params

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())

# (field, bad value, words the message must hold)
RUN_CONFIG_CASES = [
    ("n_cycles", "four", "whole number"),
    ("n_cycles", 2.5, "whole number"),
    ("n_cycles", True, "whole number"),
    ("final_steps", "512", "whole number"),
    ("final_steps", 0, ">= 1"),
    ("final_steps", None, "whole number"),
    ("validation_steps", -5, ">= 1"),
    ("obfuscated", "false", "true or false"),
    ("obfuscated", 0, "true or false"),
    ("method", 3, "string"),
    ("llm_env_steps", -1, ">= 0"),
    ("llm_env_steps", 1e5, "whole number"),
    ("ppo", [1, 2], "mapping"),
    ("ppo", {"lr": "fast"}, "number"),
    ("ppo", {"num_envs": 2.0}, "whole number"),
    ("eval_episodes", [12], "whole number"),
    ("no_such_field", 1, "unknown run option"),
]


def _check_one_line(text: str, *words: str) -> None:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(("field", "value", "words"), RUN_CONFIG_CASES)
def test_run_config_loader_rejects(tmp_path, field, value, words):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"method": "envgen", field: value}))
    with pytest.raises(ConfigError) as err:
        config = RunConfig.from_yaml(path)
        from envgen.loop.cli import checked_config  # PPO overrides and network too

        checked_config(path)
        pytest.fail(f"accepted {config}")
    _check_one_line(str(err.value), str(path), field.split(".")[0], words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("n_cycles: [\n", "YAML syntax error at line"),
        ("- n_cycles: 4\n", "not `field: value`"),
        ("n_cycles: 4\n  final_steps: 5\n", "YAML syntax error"),
    ],
)
def test_run_config_files_rejected(tmp_path, text, words):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        RunConfig.from_yaml(path)
    _check_one_line(str(err.value), str(path), words)


def test_missing_file_and_directory(tmp_path):
    for path, words in ((tmp_path / "nope.yaml", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(ConfigError) as err:
            RunConfig.from_yaml(path)
        _check_one_line(str(err.value), str(path), words)


def _params_with(path: str, value) -> dict:
    params = json.loads(json.dumps(PARAMS))  # a deep copy
    *parents, last = path.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[last] = value
    return params


PARAMS_CASES = [
    ("profiles.smoke.step_scale", "tiny", "number"),
    ("profiles.smoke.step_scale", 0, "> 0"),
    ("profiles.smoke.seeds", "0,1", "list of whole numbers"),
    ("profiles.smoke.seeds", [0, "1"], "list of whole numbers"),
    ("profiles.smoke.round_to_rollouts", "yes", "true or false"),
    ("profiles.smoke.validation_steps", -5, "positive"),
    ("profiles.smoke.eval_episodes", 2.5, "whole number"),
    ("profiles.smoke.device", "gpu", "cpu or cuda"),
    ("profiles.smoke.ppo", "fast", "mapping"),
    ("profiles.smoke.ppo", {"num_envs": "8"}, "whole number"),
    ("profiles.smoke.games", [1], "mapping"),
    ("profiles.smoke.games.heist.seeds", 3, "list of whole numbers"),
    ("profiles.smoke.games.heist.step_scale", "small", "number"),
    ("profiles.paper.claim_grade", "true", "true or false"),  # not the chosen profile
    ("profiles.smoke", ["step_scale"], "mapping"),
    ("profile", "huge", "not under `profiles:`"),
    ("execution.workers", "2", "whole number"),
    ("execution.workers", -1, ">= 0"),
    ("execution.gpus_per_run", "half", "number"),
    ("execution.ray_address", 5, "string or null"),
    ("execution.cores", 2, "unknown key"),
    ("execution", [1], "mapping"),
    ("executor", "slurm", "local"),
]


@pytest.mark.parametrize(("field", "value", "words"), PARAMS_CASES)
def test_params_loader_rejects(tmp_path, field, value, words):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(_params_with(field, value)))
    with pytest.raises(ConfigError) as err:
        resolved_params(path)
    _check_one_line(str(err.value), str(path), field.split(".")[-1], words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_params_files_rejected(tmp_path):
    path = tmp_path / "params.yaml"
    for text, words in (("", "is empty"), ("profile: [\n", "YAML syntax error")):
        path.write_text(text)
        with pytest.raises(ConfigError) as err:
            read_params(path)
        _check_one_line(str(err.value), str(path), words)
    assert resolved_params(REPO / "params.yaml")["profile"]["name"] == PARAMS["profile"]


def test_params_stage_plans_the_replication_files_and_checks_the_device(tmp_path, monkeypatch):
    """What a train stage would refuse only after DVC removed its outputs is refused here."""
    table = tmp_path / "table9.yaml"
    table.write_text("table: table9\nrows:\n  - {row: PPO, speed: 1}\n")
    with pytest.raises(ConfigError) as err:
        resolved_params(REPO / "params.yaml", [table])
    _check_one_line(str(err.value), str(table), "speed: unknown key")
    gpu = tmp_path / "params.yaml"
    gpu.write_text(yaml.safe_dump(_params_with("profiles.smoke.device", "cuda")))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(ConfigError) as err:
        resolved_params(gpu)
    _check_one_line(str(err.value), "profiles.smoke.device", "torch finds no GPU")


def test_dvc_yaml_check_params_plans_every_table_the_train_stages_train():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    tables = dvc["vars"][0]["tables"]
    assert dvc["vars"][0]["table_files"].split() == [f"replication/{t}.yaml" for t in tables]
    assert "--tables ${table_files}" in dvc["stages"]["check_params"]["cmd"]
    assert "replication" in dvc["stages"]["check_params"]["deps"]


# --- run directories ---------------------------------------------------------------------
def test_torn_last_log_line_dropped_on_resume_and_named_when_read(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"step": 8, "length": 3}\n{"step": 16, "len')
    with pytest.raises(EnvGenError) as err:
        read_jsonl(path)
    _check_one_line(str(err.value), f"{path}:2", "damaged log line", "--resume")
    log = JsonlLog(path)
    log.truncate_after(16)
    log.close()
    assert read_jsonl(path) == [{"step": 8, "length": 3}]
    path.write_text('{"step": 8}\ngarbage\n{"step": 16}\n')  # not a torn last line
    log = JsonlLog(path)
    with pytest.raises(EnvGenError, match="episodes.jsonl:2: damaged"):
        log.truncate_after(16)


@pytest.mark.parametrize("content", [b"", b"garbage", b"PK\x03\x04trunc"])
def test_damaged_checkpoint_named(tmp_path, content):
    import torch

    (tmp_path / "latest.pt").write_bytes(content)
    with pytest.raises(EnvGenError) as err:
        load_checkpoint(tmp_path, torch.device("cpu"))
    _check_one_line(str(err.value), "latest.pt", "unreadable checkpoint", "remove")
    torch.save({"model": 1}, tmp_path / "latest.pt")  # a torch file, not ours
    with pytest.raises(EnvGenError, match="not a checkpoint of this program"):
        load_checkpoint(tmp_path, torch.device("cpu"))


# --- through the CLIs --------------------------------------------------------------------
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-m", "envgen.cli", "run", "bad.yaml", "--seed", "0"], "n_cycles"),
        (["-m", "envgen.cli", "run", "cfgdir", "--seed", "0"], "is a directory"),
        (["-m", "envgen.cli", "run", "ok.yaml", "--seed", "0", "--device", "gpu"], "--device"),
        (["-m", "envgen.cli", "run", "ok.yaml", "--seed", "0", "--workers", "-1"], "--workers"),
        (["-m", "envgen.cli", "train", "--steps", "-5", "--seed", "0", "--out", "x"], "--steps"),
        (["-m", "envgen.cli", "train", "--steps", "64", "--seed", "0", "--out", "file"], "file"),
        (
            [
                "-m",
                "envgen.cli",
                "train",
                "--steps",
                "9",
                "--seed",
                "0",
                "--out",
                "x",
                "--torch-threads",
                "0",
            ],
            "--torch-threads",
        ),  # fmt: skip
        (["-m", "envgen.cli", "bench", "env", "--seconds", "0"], "--seconds"),
        (["-m", "envgen.cli", "llm", "verify", "--cache-dir", "/typo"], "no such directory"),
        (["-m", "envgen.cli", "llm", "show", "--cache-dir", "badcache"], "unreadable cache"),
        (
            [
                "-m",
                "envgen.pipeline.train",
                "t.yaml",
                "--params",
                "bad_params.yaml",
                "--runs-root",
                "runs",
                "--out",
                "o.json",
            ],
            "bad_params.yaml: profiles.smoke.seeds",
        ),  # fmt: skip
        (["-m", "envgen.pipeline.params_stage", "bad_params.yaml"], "seeds"),
    ],
)
def test_cli_mistakes_are_one_line(tmp_path, args, words):
    (tmp_path / "bad.yaml").write_text("n_cycles: four\n")
    (tmp_path / "ok.yaml").write_text("method: original_only\n")
    (tmp_path / "cfgdir").mkdir()
    (tmp_path / "file").write_text("")
    (tmp_path / "badcache").mkdir()
    (tmp_path / "badcache" / "0123.json").write_text('{"request": ')
    (tmp_path / "t.yaml").write_text((REPO / "replication" / "table1.yaml").read_text())
    (tmp_path / "bad_params.yaml").write_text(
        yaml.safe_dump(_params_with("profiles.smoke.seeds", "0,1"))
    )
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = _cli(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stdout.strip() == "" or result.stderr.strip() == ""
    _check_one_line(result.stdout + result.stderr, words)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "command", [["run", "ok.yaml"], ["train", "--steps", "64", "--out", "out"]], ids=str
)
def test_a_bad_worker_variable_is_one_line_before_any_work(tmp_path, monkeypatch, command):
    (tmp_path / "ok.yaml").write_text("method: original_only\n")
    monkeypatch.setenv("ENVGEN_ENV_WORKERS", "two")
    result = _cli("-m", "envgen.cli", *command, "--seed", "0", cwd=tmp_path)
    assert result.returncode != 0
    _check_one_line(result.stdout + result.stderr, "ENVGEN_ENV_WORKERS", "whole number")
    assert [p.name for p in tmp_path.iterdir()] == ["ok.yaml"]


# --- dvc repro -------------------------------------------------------------------------
DVC = Path(sys.executable).with_name("dvc")


def test_dvc_yaml_every_train_stage_waits_for_check_params():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    (out,) = stages["check_params"]["outs"]
    assert out == {"results/params.json": {"cache": False, "persist": True}}
    assert "results/params.json" in stages["train"]["do"]["deps"]
    for name, stage in stages.items():
        if name != "check_params" and "profiles.${profile}" in stage.get("params", []):
            assert "results/params.json" in stage["do"]["deps"], name


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this python")
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "step_scale: 0.005 ",
            "step_scale: tiny ",
            "profiles.smoke.step_scale: 'tiny' is not a number",
        ),
        (
            "step_scale: 0.005 ",
            "step_scale: .nan ",
            "profiles.smoke.step_scale: nan is not a finite number",
        ),
        ("profile: smoke", "profile: smoke\nprofle: paper", "profle: unknown key; did you mean"),
        (
            "ppo: {num_envs: 8, num_steps: 64, minibatches: 4, checkpoint_every: 4096}",
            "ppo: {num_envs: 1000000, num_steps: 64, minibatches: 4}",
            "profiles.smoke.ppo.num_envs: 1,000,000 envs x 64 steps need about",
        ),
        pytest.param(
            "    device: cpu\n    claim_grade: false\n    llm_model: qwen2.5",
            "    device: cuda\n    claim_grade: false\n    llm_model: qwen2.5",
            "profiles.smoke.device: 'cuda', but torch finds no GPU",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU"),
        ),
    ],
)
def test_dvc_repro_with_bad_params_removes_nothing(tmp_path, old, new, message):
    shutil.copy(REPO / "dvc.yaml", tmp_path)
    text = (REPO / "params.yaml").read_text()
    assert text.count(old) == 1  # the smoke block's text, found nowhere else
    (tmp_path / "params.yaml").write_text(text.replace(old, new, 1))
    for name in ("envgen", "replication", "data"):
        (tmp_path / name).symlink_to(REPO / name)
    table = tmp_path / "results" / "table8"
    table.mkdir(parents=True)
    for name in ("runs.json", "metrics.json", "scores.json"):
        (table / name).write_text('{"committed": true}\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PATH": f"{DVC.parent}:{os.environ['PATH']}"}
    subprocess.run([DVC, "init", "--no-scm", "-q"], cwd=tmp_path, check=True, env=env)
    result = subprocess.run(
        [DVC, "repro", "train@table8"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert f"params.yaml: {message}" in result.stderr, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "Running stage 'train@table8'" not in result.stdout
    for name in ("runs.json", "metrics.json", "scores.json"):
        assert (table / name).read_text() == '{"committed": true}\n'


@pytest.mark.parametrize(
    ("config", "output", "words"),
    [
        (b"\xff\xfe{}", "out.png", "cannot be read"),
        (b"{", "out.png", "cannot read a JSON config"),
        (b"{}", "out.xyz", "unknown image extension '.xyz'"),
        (b"{}", "outdir", "is a directory"),
        (b"{}", "/proc/nope/x.png", "cannot write /proc/nope/x.png"),
    ],
)
def test_envs_preview_mistakes_are_one_line(tmp_path, capsys, config, output, words):
    from envgen.cli import main

    (tmp_path / "env.json").write_bytes(config)
    (tmp_path / "outdir").mkdir()
    before = sorted(tmp_path.rglob("*"))
    out = output if output.startswith("/") else str(tmp_path / output)
    assert main(["envs", "preview", str(tmp_path / "env.json"), "-o", out]) == 1
    _check_one_line(capsys.readouterr().err, "envgen envs preview:", words)
    assert sorted(tmp_path.rglob("*")) == before
